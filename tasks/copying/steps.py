"""A copying job's steps (archive, backup), each exactly once through the ledger: the context every step
needs, one step run, the verified copy of a file, and the stop at a refusal that would refuse every call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from connectors.client import VideoClient
from connectors.download import Downloader
from connectors.errors import VideoApiError, stops_run
from state.ledger import Ledger
from state.models import Op
from tasks.destination import Destination
from tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, exactly_once
from tasks.stop import Stop
from tasks.streamed_copy import COPY_ERRORS, adopt_copy, copy_link

if TYPE_CHECKING:
    from tasks.gap import Gap

__all__ = [
    "NOT_COPIED",
    "NOT_TAKEN_EFFECT",
    "REPEATED",
    "STEP_ERRORS",
    "STOPPED",
    "CopyContext",
    "adopted",
    "copy_step",
    "each_item",
    "run_step",
]

#: What a step's failure can be: the service, the copy (download, check, destination), a bad value.
STEP_ERRORS = (VideoApiError, *COPY_ERRORS, ValueError)
#: Why a step left open by a crash is made again: its recovery check found it had not taken effect.
NOT_TAKEN_EFFECT = "repeated after an unknown outcome: it had not taken effect"
#: Why a copy left open by a crash is made again: what it left was not a complete, verified object.
NOT_COPIED = "repeated after an unknown outcome: no complete object with the expected md5"
#: Why a repeatable step left open by a crash is made again (what it left unfinished removed first).
REPEATED = "repeated after an unknown outcome: its unfinished writes removed"
#: The state of an item the run did not finish because it stopped (a refusal of the token or the workspace).
STOPPED = "stopped"

R = TypeVar("R")
ItemT = TypeVar("ItemT")


@dataclass(kw_only=True)
class CopyContext:
    """What every step of a copying job needs: ledger and run, client, destination, downloader, the copy's
    tries, the clock; gap: the replication gap when the run's remote ledger may be behind (tasks/gap.py);
    stop: the run's stop (set at a refusal of the token or the workspace: no further item is started)."""

    ledger: Ledger
    run_id: str
    client: VideoClient
    dest: Destination
    downloader: Downloader
    attempts: int = 5
    backoff: float = 0.5
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    gap: Gap | None = None
    stop: Stop = field(default_factory=Stop)


def run_step(
    ctx: CopyContext,
    journal: OpJournal[Any],
    call: Callable[[], Any],
    *,
    recover: Callable[[Op], Any] | None = None,
    leftovers: Sequence[str] = (),
    absent: str | None = None,
) -> tuple[bool, Any]:
    """Run one step exactly once (tasks/exactly_once.py): (True, result) done now, (False, "<step>: error")
    failed now; the step's name is the last part of its op key.

    An intent a crash left open is settled first: what its writes left unfinished at `leftovers` (keys:
    multipart uploads, .part files) is removed, then recover(op) gives the result when the step had taken
    effect (a direct check, believed at once), None when not (void for `absent`: the step runs again);
    without either the step is repeatable and is made again. A refusal that would refuse every further call
    alike (the token's, the workspace's: connectors.errors.stops_run) stops the run (ctx.stop) and is raised.
    """
    lookup = None
    if recover is not None or leftovers:
        found = recover

        def settle(intent: Intent) -> Any:
            for key in leftovers:
                ctx.dest.discard_partial(key)
            op = ctx.ledger.get_op(int(intent.ref))
            return found(op) if found is not None and op is not None else None

        why = absent or (NOT_TAKEN_EFFECT if recover is not None else REPEATED)
        lookup = Lookup(settle, listing=False, absent=why)
    try:
        return True, exactly_once(journal, call, lookup=lookup, refused=STEP_ERRORS)
    except (*STEP_ERRORS, NotMade) as exc:
        if stops_run(exc):
            ctx.stop(exc)
            raise
        return False, f"{journal.op_key.rsplit(':', 1)[-1]}: {exc}"


def adopted(
    ctx: CopyContext,
    params: Mapping[str, Any],
    stamp: str,
    same: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Any] | None:
    """The result of a copy a crash interrupted, when its object is already complete at the destination with
    the asset's size and md5 (unfinished parts dropped first) and same(params) holds (still this content);
    None when not (or no md5 is known to compare). stamp: the result's time field (archived_at, ...)."""
    key = str(params.get("object_key") or "")
    if not key or not adopt_copy(ctx.dest, key, params.get("bytes"), params.get("md5")):
        return None
    if same is not None and not same(params):
        return None
    return {**params, stamp: ctx.now().isoformat(), "adopted": True}


def copy_step(
    ctx: CopyContext,
    journal: OpJournal[Any],
    link: str,
    *,
    size: int | None,
    md5: str | None,
    stamp: str,
    same: Callable[[Mapping[str, Any]], bool] | None = None,
) -> tuple[bool, Any]:
    """Copy one asset's file (its signed link: a secret, in no result) to journal.params' object_key, exactly
    once: streamed and verified (tasks/streamed_copy.py); the result is the params with the bytes and md5
    copied and the time under `stamp`. A copy a crash left open is adopted when complete (adopted())."""
    params = dict(journal.params)
    key = str(params["object_key"])

    def call() -> dict[str, Any]:
        copied = copy_link(
            ctx.dest,
            ctx.downloader,
            link,
            key,
            size=size,
            md5=md5,
            attempts=ctx.attempts,
            backoff=ctx.backoff,
        )
        return {**params, "bytes": copied.size, "md5": copied.md5, stamp: ctx.now().isoformat()}

    def recover(op: Op) -> dict[str, Any] | None:
        return adopted(ctx, op.params, stamp, same)

    return run_step(ctx, journal, call, recover=recover, absent=NOT_COPIED)


def each_item(
    stop: Stop, work: Callable[[ItemT], R], stopped: Callable[[ItemT, str], R]
) -> Callable[[ItemT], R]:
    """work for one item, as a run's workers call it: once the run is stopped no item is started
    (stopped(item, why)); a refusal of the token or the workspace (stops_run) met by the item's work stops
    the run and leaves the item stopped, not failed (nothing was made; a rerun makes it)."""

    def one(item: ItemT) -> R:
        if stop.is_set():
            return stopped(item, f"not attempted: the run stopped ({stop.reason})")
        try:
            return work(item)
        except VideoApiError as exc:
            if not stops_run(exc):
                raise
            stop(exc)
            return stopped(item, f"not made: {exc}")

    return one

"""Exactly once: the one sequence every call that changes the service goes through, in every job.

The service has no Idempotency-Key (spec 7, rule 4), so a call is written down before it is made and settled
before it is ever made again: an intent an earlier attempt left open is settled first (what it did is looked
up: done with what was found, void when it provably did nothing); with none open, a subject a stale replica
may not know is looked up across the replication gap (GapCheck, tasks/gap.py: found, it is adopted: intent,
then found); then the intent is written, the call made, its outcome written; an answer lost on the way
(UnknownOutcomeError) is looked up the same way, never repeated blind. Lookups follow tasks/lookup.py (what
a listing may show, and the settle time before "not there" is believed). Where intent and outcome are
written is a Journal: the ledger's ops table under one op_key (OpJournal: archive steps, setup writes, apply
units, migrate's finish step and deletes) or an item's own create columns (migrate's create,
tasks/migrate/create_journal.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from videoferry.connectors.errors import UnknownOutcomeError, VideoApiError, WorkspaceRefusedError
from videoferry.state.machine import OpStatus
from videoferry.tasks.lookup import LOOKUP_WAIT_SECONDS, Postponed, TooEarly, settle_remaining_at

if TYPE_CHECKING:
    from videoferry.state.ledger import Ledger
    from videoferry.tasks.gap import Gap

T = TypeVar("T")
R_contra = TypeVar("R_contra", contravariant=True)

#: Why an open intent of a repeatable call (no lookup: the same whatever it did) becomes void.
REPEATABLE = "outcome unknown; repeatable (the same whatever happened): sent again"
#: How the void reason of a call the workspace's state refused begins (errors.WorkspaceRefusedError).
WORKSPACE_REFUSED = "the workspace refused it"


@dataclass(frozen=True)
class Intent:
    """An intent written before a call: where it is (an op id, or an item key) and when (our clock)."""

    ref: int | str
    at: datetime | None


class NotMade(Exception):
    """A call whose answer was lost provably did nothing (its intent is now void): it may be sent again."""

    def __init__(self, unknown: UnknownOutcomeError) -> None:
        super().__init__(str(unknown))
        self.unknown = unknown


class StopSignal(Protocol):
    """A run's stop signal as a wait sees it (threading.Event-like): wait() is True once the run stops."""

    def wait(self, timeout: float | None = None) -> bool:
        """Wait at most timeout seconds; True when the run was stopped."""


class Journal(Protocol[R_contra]):
    """Where one call's intent and outcome are written."""

    def open_intent(self) -> Intent | None:
        """The intent an earlier attempt left without an outcome, if any."""

    def write_intent(self) -> Intent:
        """Write the intent, before the call."""

    def write_done(self, intent: Intent, result: R_contra) -> None:
        """Write what the call answered, right after it."""

    def write_found(self, intent: Intent, found: R_contra) -> None:
        """Write what a lookup found that the call (its answer lost) did."""

    def write_failed(self, intent: Intent, exc: BaseException) -> None:
        """Write that the service refused the call (nothing was done)."""

    def write_void(self, intent: Intent, why: str) -> None:
        """Write that the call provably did nothing (or is the same whatever it did): it may be sent again."""


@dataclass(frozen=True)
class Lookup(Generic[T]):
    """How to find what a call did when its answer was lost.

    find(intent): what the call made or changed, None when it is not there; raises Postponed when it cannot
    tell (a failed listing, several candidates). listing: "not there" is believed only from a listing begun
    tasks/lookup.SETTLE_SECONDS after the lost answer (lookup.settle_start: lists lag, and a call may be made
    long after its intent); a direct read (a GET, a stored object) is believed at once.
    poll_every: while it cannot tell, look again this often (None: look once more when the settle time is
    over, and a Postponed from find is final), for at most `bound` seconds (then Postponed: the intent stays
    open for a later round or run). absent: why the intent becomes void when nothing is found.
    """

    find: Callable[[Intent], T | None]
    listing: bool = True
    poll_every: float | None = None
    absent: str = "not found by listing after the settle time"
    bound: float = LOOKUP_WAIT_SECONDS


def look_up(lookup: Lookup[T], intent: Intent, *, wait: bool, stop: StopSignal | None = None) -> T | None:
    """What the call of `intent` did: found, or None once "not there" can be believed (tasks/lookup.py).

    Without wait, a lookup that cannot tell yet raises at once: TooEarly (a Postponed naming the seconds until
    "not there" can be believed) when it found nothing too early, find's Postponed when find cannot tell;
    with wait, it waits (ended by the run's stop) and looks again, for at most lookup.bound seconds while
    find keeps postponing (the settle time bounds the wait for "not there").
    """
    started = time.monotonic()
    while True:
        # Before the listing: "not there" is believed from a listing that began after the settle time.
        remaining = settle_remaining_at(intent.at, intent.ref) if lookup.listing else 0.0
        try:
            found = lookup.find(intent)
        except Postponed:
            if not wait or lookup.poll_every is None or time.monotonic() - started >= lookup.bound:
                raise
            if _pause(lookup.poll_every, stop):
                raise
            continue
        if found is not None:
            return found
        if remaining <= 0:
            return None
        if not wait:
            raise TooEarly(str(intent.ref), remaining)  # the caller may look again as soon as it can tell
        pause = remaining if lookup.poll_every is None else min(lookup.poll_every, remaining)
        if _pause(pause, stop):
            raise Postponed(str(intent.ref))


def _pause(seconds: float, stop: StopSignal | None) -> bool:
    """Wait; True when the run was stopped meanwhile."""
    if stop is not None:
        return stop.wait(seconds)
    time.sleep(seconds)
    return False


def settle(
    journal: Journal[T],
    intent: Intent,
    lookup: Lookup[T] | None,
    *,
    wait: bool = False,
    stop: StopSignal | None = None,
) -> T | None:
    """Settle an intent whose outcome is unknown: done with what the lookup found (returned), or void (None)
    when the call provably did nothing or is repeatable; Postponed (the intent stays open) while that cannot
    be told yet."""
    if lookup is None:
        journal.write_void(intent, REPEATABLE)
        return None
    found = look_up(lookup, intent, wait=wait, stop=stop)
    if found is None:
        journal.write_void(intent, lookup.absent)
        return None
    journal.write_found(intent, found)
    return found


@dataclass(frozen=True)
class GapCheck(Generic[T]):
    """How a call's subject is found across the replication gap (tasks/gap.py), before its intent, when the
    run's restored ledger may miss what a lost run did.

    subject: its key in the gap's bookkeeping (the job's wing declares which ledger entries are subjects).
    find(): what a lost run's call made, found in the gap's one listing (Gap.created) or by a direct check;
    None when nothing is there; tasks/gap.GapAmbiguous when several could be it. find None: nothing can
    hide there (the call is durable or repeatable): the subject only counts as looked up. hold(): held
    around the lookup and the adoption's record (one step against other subjects' lookups).
    """

    gap: Gap
    subject: str
    find: Callable[[], T | None] | None
    hold: Callable[[], AbstractContextManager[Any]] = nullcontext


def adopt_across_gap(journal: Journal[T], check: GapCheck[T] | None) -> T | None:
    """The step before the intent: a subject not looked up yet in this run (and with no intent open) is looked
    up across the gap; found, it is adopted (journal: intent, then found) and returned: nothing is sent.
    None when there is no gap, nothing to look up, or nothing found (the call may be made)."""
    if check is None or not check.gap.pending(check.subject) or journal.open_intent() is not None:
        return None
    find = check.find
    if find is None:
        check.gap.mark_looked(check.subject)
        return None
    with check.hold():
        found = check.gap.look(check.subject, find)
        if found is None:
            return None
        journal.write_found(journal.write_intent(), found)
    return found


@dataclass(frozen=True)
class Waits:
    """Whether a lookup may wait until it can tell (else Postponed goes to the caller's next round).

    earlier: settling an intent an earlier attempt left open; lost: an answer lost just now.
    """

    earlier: bool = False
    lost: bool = False


def exactly_once(
    journal: Journal[T],
    call: Callable[[], T],
    *,
    lookup: Lookup[T] | None = None,
    refused: tuple[type[BaseException], ...] = (VideoApiError,),
    waits: Waits = Waits(),  # noqa: B008 - frozen, shared safely
    stop: StopSignal | None = None,
    hold: Callable[[], AbstractContextManager[Any]] = nullcontext,
    gap: GapCheck[T] | None = None,
) -> T:
    """Make one call that changes the service, exactly once; its result (or what a lookup found it did).

    1. An intent an earlier attempt left open is settled first (settle()): what it did is returned and
       nothing is sent; with none open, the subject is looked up across the replication gap
       (adopt_across_gap(): found, adopted and returned). 2. The intent is written. 3. The call, under
       hold() until its outcome is written.
    4. Its outcome: done with the answer; a refusal of the workspace's state (WorkspaceRefusedError: quota,
       balance...) is a definite "not made": void, raised again (the run stops; a later run sends it again);
       failed with any other refusal (an exception of `refused`, raised again);
       a lost answer is looked up: found, done with it; provably nothing, void and NotMade (the caller may
       send it again); cannot tell yet, Postponed (the intent stays open for a later round or run). A call
       without a lookup is repeatable: its lost answer is written failed and raised. Any other exception
       leaves the intent open: a later attempt settles it before anything is sent.
    """
    earlier = journal.open_intent()
    if earlier is not None:
        found = settle(journal, earlier, lookup, wait=waits.earlier, stop=stop)
        if found is not None:
            return found
    else:
        adopted = adopt_across_gap(journal, gap)
        if adopted is not None:
            return adopted
    intent = journal.write_intent()
    with hold():
        try:
            result = call()
        except UnknownOutcomeError as exc:
            if lookup is None:
                journal.write_failed(intent, exc)
                raise
            found = settle(journal, intent, lookup, wait=waits.lost, stop=stop)
            if found is None:
                raise NotMade(exc) from exc
            return found
        except WorkspaceRefusedError as exc:
            journal.write_void(
                intent, f"{WORKSPACE_REFUSED} ({error_code(exc)}): nothing was made; a rerun sends it"
            )
            raise
        except refused as exc:
            journal.write_failed(intent, exc)
            raise
        journal.write_done(intent, result)
        return result


def error_code(exc: VideoApiError) -> str | int:
    """The code a service failure is recorded under: error.code, else http_<status>, else the error's kind."""
    if exc.code is not None:
        return exc.code
    return f"http_{exc.status}" if exc.status is not None else type(exc).__name__


def failure_code(exc: BaseException) -> str | int | None:
    """The code any failure of a call is recorded under: error_code() for the service's, else its own code."""
    if isinstance(exc, VideoApiError):
        return error_code(exc)
    code = getattr(exc, "code", None)
    return code if isinstance(code, str | int) else None


def _as_is(result: Any) -> tuple[Any, tuple[str, str] | None]:
    return result, None


@dataclass
class OpJournal(Generic[T]):
    """A call's intent and outcome in the ledger's ops table, under one op_key (at most one intent open).

    outcome(result): what done stores, and the object the call created as (kind, id) when it made one.
    describe(exc): the message failed stores (the exception's text unless said otherwise).
    """

    ledger: Ledger
    run_id: str
    op_key: str
    kind: str
    params: Mapping[str, Any]
    owner_key: str | None = None
    video_id: str | None = None
    target: tuple[str, str] | None = None
    before: Mapping[str, Any] | None = None
    outcome: Callable[[T], tuple[Any, tuple[str, str] | None]] = _as_is
    describe: Callable[[BaseException], str] = str
    written: Intent | None = field(default=None, init=False)

    def open_intent(self) -> Intent | None:
        """The op of this op_key whose outcome is unknown."""
        open_ops = self.ledger.ops(op_key=self.op_key, status=OpStatus.INTENT)
        return Intent(open_ops[-1].op_id, open_ops[-1].intent_at) if open_ops else None

    def write_intent(self) -> Intent:
        """A new op row in status intent."""
        at = datetime.now(UTC)
        op_id = self.ledger.record_op_intent(
            self.owner_key,
            self.kind,
            self.params,
            run_id=self.run_id,
            video_id=self.video_id,
            op_key=self.op_key,
            before=self.before,
            target_kind=self.target[0] if self.target else None,
            target_id=self.target[1] if self.target else None,
        )
        self.written = Intent(op_id, at)
        return self.written

    def write_done(self, intent: Intent, result: T) -> None:
        """intent -> done, with the result and the object the call created."""
        stored, created = self.outcome(result)
        self.ledger.record_op_outcome(
            int(intent.ref),
            OpStatus.DONE,
            stored,
            run_id=self.run_id,
            created_kind=created[0] if created else None,
            created_id=created[1] if created else None,
        )

    def write_found(self, intent: Intent, found: T) -> None:
        """intent -> done, with what the lookup found."""
        self.write_done(intent, found)

    def write_failed(self, intent: Intent, exc: BaseException) -> None:
        """intent -> failed, with the error's code, message and request id."""
        self.ledger.record_op_outcome(
            int(intent.ref),
            OpStatus.FAILED,
            error_code=failure_code(exc),
            error_message=self.describe(exc),
            request_id=getattr(exc, "request_id", None),
            run_id=self.run_id,
        )

    def write_void(self, intent: Intent, why: str) -> None:
        """intent -> void: the call did nothing that matters; it may be sent again."""
        self.ledger.record_op_outcome(int(intent.ref), OpStatus.VOID, error_message=why, run_id=self.run_id)

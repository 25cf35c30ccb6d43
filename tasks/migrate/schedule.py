"""What happens next to each item, round after round (no Prefect): transfer in batches, poll, finish."""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol

from connectors.errors import AuthError, VideoApiError
from state.machine import CREATING, DONE, FAILED, PLANNED, UPLOADING
from tasks.lookup import SETTLE_SECONDS
from tasks.migrate.context import MigrateContext
from tasks.migrate.finish import finish_item, owes_nothing
from tasks.migrate.readiness import Watcher

log = logging.getLogger(__name__)

#: States transfer workers take items from.
TRANSFER_STATES = (PLANNED, CREATING, UPLOADING)
#: Largest batch a transfer task gets.
MAX_BATCH = 25
#: Extra rounds for items whose create outcome could not be reconciled yet (the listing kept failing),
#: each after a pause of RECONCILE_PAUSE x the round number; after them an item stays in creating for the
#: next run (never failed: that could allow a second create of a video that exists).
RECONCILE_ROUNDS = 3
RECONCILE_PAUSE = 5.0
#: Rounds for lookups that were only too early to say "no video" (lists that lag) wait for the youngest intent
#: and use up nothing: each item makes at most MigrateContext.max_create_attempts creates a run, so they end.
#: This bound only guards against a bug; it is far above what those creates can need.
SETTLE_ROUNDS = 1000


class Handle(Protocol):
    """A running batch (a concurrent.futures.Future or a Prefect future adapter)."""

    def done(self) -> bool: ...


Submit = Callable[[list[str]], Handle]


def make_batches(keys: Sequence[str], transfers: int, max_batch: int = MAX_BATCH) -> list[list[str]]:
    """Split keys so every worker gets work: at most max_batch per batch, at least `transfers` batches."""
    if not keys:
        return []
    size = max(1, min(max_batch, math.ceil(len(keys) / max(transfers, 1))))
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


def advance_items(
    ctx: MigrateContext,
    submit: Submit,
    *,
    transfers: int,
    wait_timeout: float | None = None,
    tick: float = 0.2,
    on_tick: Callable[[], None] | None = None,
) -> bool:
    """Move every item on to its end state: transfer the pending, watch the uploaded, finish the done.

    Returns True when nothing is left in flight (every item reached an end state this run), False when the
    wait timed out or the run was stopped (the ledger keeps everything for the next run). wait_timeout counts
    from the moment the last transfer ended: a long migration is not cut short by its own upload time.
    """
    # Items a crash or a lost answer left in creating are reconciled first, before any new create: one of
    # them may own the video a new create would otherwise duplicate.
    unsettled_first = ctx.ledger.pending_keys([CREATING])
    held = set(unsettled_first)
    keys = [k for k in ctx.ledger.pending_keys(TRANSFER_STATES) if k not in held]
    first: list[Handle] = []
    if unsettled_first:
        first = [submit(batch) for batch in make_batches(unsettled_first, transfers)]
    queue = make_batches(keys, transfers)
    queue.reverse()
    handles: list[Handle] = list(first)
    watcher = Watcher(ctx)
    finish_tried: set[str] = set()
    waiting_since: float | None = None  # when the last transfer ended: the wait bound counts from there
    rounds = 0  # rounds after a failed listing
    settle_rounds = 0  # rounds that only waited for a young intent
    next_round: float | None = None
    next_young = False
    while True:
        running = [h for h in handles if not h.done()]
        gate_open = all(h.done() for h in first)
        while gate_open and queue and len(running) < transfers and not ctx.abort.is_set():
            handle = submit(queue.pop())
            handles.append(handle)
            running.append(handle)
        if ctx.abort.is_set():
            if not running:
                return False
        else:
            _finish_done(ctx, finish_tried)
            watched = watcher.watched()
            uploading = bool(running or queue)
            count_creates = functools.partial(_creates_left, ctx, uploading)
            if watched and watcher.due(watched, creates_left=count_creates, uploading=uploading):
                _poll(ctx, watcher)
                _finish_done(ctx, finish_tried)
                watched = watcher.watched()
            unsettled: list[str] = []
            young = 0.0
            if not running and not queue and settle_rounds < SETTLE_ROUNDS:
                unsettled, young = _unsettled(ctx)
                if not young and rounds >= RECONCILE_ROUNDS:
                    unsettled = []  # the listing kept failing: leave them in creating for the next run
            if unsettled:
                if next_round is None:
                    # A lookup too early to say "no video" waits until the listing can show it (it does not
                    # count as a failed round); one whose listing failed backs off round by round.
                    pause = young + 0.5 if young else RECONCILE_PAUSE * (rounds + 1)
                    next_round = time.monotonic() + pause
                    next_young = bool(young)
                    log.info("%d items with an unknown create outcome; reconciling again", len(unsettled))
                elif time.monotonic() >= next_round:
                    if next_young:
                        settle_rounds += 1
                    else:
                        rounds += 1
                    next_round = None
                    queue = make_batches(unsettled, transfers)
                    queue.reverse()
                    continue
            elif not running and not queue and not watched:
                # A webhook may have moved the last watched item to done after the finish step above; none
                # can arrive now (nothing is watched), so one more finish step leaves no item done.
                _finish_done(ctx, finish_tried)
                return True
            if running or queue:
                waiting_since = None
            elif waiting_since is None:
                waiting_since = time.monotonic()
            if (
                waiting_since is not None
                and wait_timeout is not None
                and (time.monotonic() - waiting_since > wait_timeout)
            ):
                log.warning("stopped waiting for processing after %.0f s; rerun to go on", wait_timeout)
                return False
        if on_tick is not None:
            on_tick()
        ctx.abort.wait(tick)


def _unsettled(ctx: MigrateContext) -> tuple[list[str], float]:
    """Keys left in creating, and the seconds until the youngest intent may be judged (0: all may now)."""
    items = ctx.ledger.items([CREATING])
    now = datetime.now(UTC)
    waits = [
        SETTLE_SECONDS - (now - i.created_intent_at).total_seconds()
        for i in items
        if i.created_intent_at is not None
    ]
    return [i.key for i in items], max([0.0, *(w for w in waits if w > 0)]) if waits else 0.0


def _poll(ctx: MigrateContext, watcher: Watcher) -> None:
    try:
        watcher.poll_once()
    except AuthError as exc:
        ctx.stop(exc)
    except VideoApiError as exc:
        log.warning("status poll failed (%s); trying again next round", exc.code or exc.status)


def _creates_left(ctx: MigrateContext, uploading: bool) -> int:
    """Items whose create is not answered yet (planned, or in creating); 0 once no transfer runs."""
    if not uploading:
        return 0
    counts = ctx.ledger.counts()
    return counts.get(PLANNED, 0) + counts.get(CREATING, 0)


def _finish_done(ctx: MigrateContext, tried: set[str]) -> None:
    waiting = [i for i in ctx.ledger.items([DONE]) if i.key not in tried]
    # Items that owe no call are finished together, in one transaction (3000 single moves cost a second).
    plain = [i.key for i in waiting if owes_nothing(i)]
    if plain and not ctx.abort.is_set():
        try:
            ctx.ledger.finish_all(ctx.run_id, plain)
            tried.update(plain)
        except Exception:
            log.warning("finishing %d items together failed; finishing them one by one", len(plain))
    for item in waiting:
        if item.key in tried or ctx.abort.is_set():
            continue
        tried.add(item.key)
        try:
            state = finish_item(ctx, item)
        except Exception:
            log.exception("item %s: the finish step crashed; it stays done for the next run", item.key)
            continue
        if state == FAILED:
            log.info("item %s: finish step failed", item.key)

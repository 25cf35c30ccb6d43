"""What happens next to each item of a migration, round after round (no Prefect): transfer, poll, finish."""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Sequence

from videoferry.connectors.errors import VideoApiError, stops_run
from videoferry.connectors.retry import describe_failure
from videoferry.state.machine import CREATING, DONE, FAILED, PLANNED, UPLOADING
from videoferry.tasks.lookup import settle_remaining_at
from videoferry.tasks.migrate.claims import Claims
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.finish import finish_item, owes_nothing
from videoferry.tasks.migrate.parked import EARLY_LOOK_SECONDS
from videoferry.tasks.migrate.readiness import Watcher
from videoferry.tasks.migrate.reconcile import sent_create
from videoferry.tasks.scheduling import Handle, Schedule, WaitBound, when_done

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
#: Rounds for lookups that were only too early to say "no video" (lists that lag) wait for the last settle
#: time and use up nothing: each item makes at most MigrateContext.max_create_attempts creates a run, so they
#: end.
#: They stop anyway once items have been left in creating this long with nothing else running (a create,
#: lost, looked up for SETTLE_SECONDS, made again: three attempts fit): those items stay in creating for the
#: next run, which looks them up before any new create, and the run ends saying so.
SETTLE_BOUND_SECONDS = 120.0


Submit = Callable[[list[str]], Handle]


def make_batches(keys: Sequence[str], transfers: int, max_batch: int = MAX_BATCH) -> list[list[str]]:
    """Split keys so every worker gets work: at most max_batch per batch, at least `transfers` batches."""
    if not keys:
        return []
    size = max(1, min(max_batch, math.ceil(len(keys) / max(transfers, 1))))
    return [list(keys[i : i + size]) for i in range(0, len(keys), size)]


class ItemSchedule(Schedule):
    """What happens next to each item of a migration, round after round (tasks/scheduling.py's phases).

    settle leftovers: items a crash or a lost answer left in creating go first, in batches, before any new
    create (one of them may own the video a new create would duplicate); a lost answer looked up too early
    (parked) goes again as soon as its settle time has passed, ahead of the batches not started yet; other
    items whose lookup could not decide are taken again in later rounds once nothing runs (RECONCILE_ROUNDS
    after a failed listing, lookups only too early until the last settle time (tasks/lookup.settle_start)
    has passed; all of it within SETTLE_BOUND_SECONDS). start what can start: the planned items' batches,
    `transfers` at a time, once the leftovers are settled. poll what waits: the destination's listing when
    the watcher says a poll is due (webhook claims confirmed by the same listing). finish what is done: the
    finish step of every item the service finished. stop on bound: every item in an end state (none parked),
    or the wait bound.
    """

    def __init__(
        self,
        ctx: MigrateContext,
        submit: Submit,
        *,
        transfers: int,
        wait_timeout: float | None,
        tick: float,
        on_tick: Callable[[], None] | None,
    ) -> None:
        super().__init__(ctx.abort, tick=tick, on_tick=on_tick)
        self.ctx = ctx
        self.submit = submit
        self.transfers = transfers
        self.bound = WaitBound(wait_timeout)
        self.watcher = Watcher(ctx)
        self.claims = Claims(ctx)
        self.finish_tried: set[str] = set()
        leftovers = ctx.ledger.pending_keys([CREATING])
        held = set(leftovers)
        #: The leftovers' batches: no new batch starts before they ended.
        self.first: list[Handle] = [self._submit(batch) for batch in make_batches(leftovers, transfers)]
        self.running: list[Handle] = list(self.first)
        self.queue = make_batches(
            [k for k in ctx.ledger.pending_keys(TRANSFER_STATES) if k not in held], transfers
        )
        self.queue.reverse()
        self.watched = 0  # items watched (uploaded, not terminal), up to a page and one: Watcher.watching()
        self.unsettled: list[str] = []
        self.rounds = 0  # rounds after a failed listing
        self.settling_since: float | None = None  # when items were first left in creating, nothing running
        self.next_round: float | None = None
        self.next_young = False
        self.listings_seen = 0  # the shared listings taken when parked items were last looked for in them
        self.transfers_ended: float | None = None  # when the last transfer ended (claims wait for the last)
        if ctx.webhooks is not None:
            ctx.webhooks.on_claim = self._claim_came

    def _submit(self, keys: list[str]) -> Handle:
        """A batch sent to a transfer; the round after its end comes at once (the next batch starts, and the
        claims that wait for the last transfer are looked at), not a tick later."""
        handle = self.submit(keys)
        when_done(handle, self.nudge)
        return handle

    def _claim_came(self) -> None:
        """Once no transfer runs, a claim begins a round at once: the last claims are confirmed as soon as
        they are in (Claims.due), not a tick later. While transfers run, the rounds' tick takes them."""
        if self.transfers_ended is not None:
            self.nudge()

    def collect(self) -> None:
        """The batches still running (of those running a round ago: the run's every batch would be O(run))."""
        self.running = [h for h in self.running if not h.done()]

    def busy(self) -> bool:
        """Whether a batch still runs."""
        return bool(self.running)

    def _idle(self) -> bool:
        return not self.running and not self.queue

    def settle_leftovers(self) -> None:
        """Parked items (a lost answer looked up too early: tasks/migrate/parked.py) go again as soon as their
        settle time has passed, in batches ahead of those not started yet, and once before it for an early
        look (EARLY_LOOK_SECONDS after they were parked) while the calls can spare a listing (near the run's
        end: its tail is the lost answers' settle times, and a found video needs none). Once nothing runs, the
        other items still in creating (their lookup could not decide) go again, a round later: after the
        settle time of the youngest intent, or a growing pause after a failed listing."""
        due = self.ctx.parked.take_due() + self._seen_parked()
        if self.ctx.parked:
            due += self.ctx.parked.take_early(EARLY_LOOK_SECONDS, self._listing_spared)
        if due:
            self.queue.extend(reversed(make_batches(due, self.transfers)))  # popped from the end: first
        self.unsettled = []
        if not self._idle():
            return
        unsettled, young = _unsettled(self.ctx, self.ctx.parked.keys())
        if not unsettled:
            self.settling_since = None
            return
        now = time.monotonic()
        if self.settling_since is None:
            self.settling_since = now
        if now - self.settling_since > SETTLE_BOUND_SECONDS:
            return  # stated bound: left in creating for the next run (_outcome says so)
        if not young and self.rounds >= RECONCILE_ROUNDS:
            return  # the listing kept failing: leave them in creating for the next run
        self.unsettled = unsettled
        if self.next_round is None:
            # A lookup too early to say "no video" waits until the listing can show it (it does not count as
            # a failed round); one whose listing failed backs off round by round.
            pause = young + 0.5 if young else RECONCILE_PAUSE * (self.rounds + 1)
            self.next_round = time.monotonic() + pause
            self.next_young = bool(young)
            log.info("%d items with an unknown create outcome; reconciling again", len(unsettled))
        elif time.monotonic() >= self.next_round:
            if not self.next_young:
                self.rounds += 1
            self.next_round = None
            self.queue = make_batches(unsettled, self.transfers)
            self.queue.reverse()

    def _listing_spared(self) -> bool:
        """Whether the calls can spare a listing for an early look: the budget of the longest window admits
        every create still to come (planned or in creating, counted up to it) and one call more, so the look
        takes no slot a create wants (none while a 429's pause lasts: the budget is 0)."""
        budget = self.ctx.client.transport.limiter.budget()
        if budget <= 1:
            return False
        return self.ctx.ledger.count([PLANNED, CREATING], at_most=budget) < budget

    def _seen_parked(self) -> list[str]:
        """Parked items whose video a listing taken since their intent (for the lookups then due) shows: they
        go now, not at their settle time ("there" needs no settle time; reconcile.locate adopts it)."""
        taken = self.ctx.listings.listings
        if taken == self.listings_seen or not self.ctx.parked:
            return []
        self.listings_seen = taken
        seen = []
        owners = self.ctx.ledger.keys_for_videos
        for key in self.ctx.parked.keys():
            item = self.ctx.ledger.get(key)
            if item is None or item.state != CREATING or item.created_intent_at is None:
                continue
            if self.ctx.listings.seen(self.ctx.client, sent_create(item), owners) is not None:
                seen.append(key)
        return self.ctx.parked.take(seen)

    def start_what_can_start(self) -> None:
        """The queued batches, `transfers` at a time, once the leftovers' batches have ended."""
        if not all(h.done() for h in self.first):
            return
        while self.queue and len(self.running) < self.transfers and not self.stop.is_set():
            handle = self._submit(self.queue.pop())
            self.running.append(handle)

    def poll_what_waits(self) -> None:
        """One listing of the destination when the watcher says a poll is due (and no webhook claims wait for
        theirs: Claims.hold_polls); while that poll is held for the youngest videos, the pages behind its
        first (Watcher.list_early); else, when webhook claims are due (Claims.due), one listing of the videos
        they are about."""
        # A count each round; the watched items themselves are read only by a poll (and by the poll's timing
        # once the creates are over): reading them every round cost O(run) per round while creates hold polls.
        self.watched = self.watcher.watching()
        self.claims.take()
        uploading = not self._idle()
        if uploading:
            self.transfers_ended = None
        elif self.transfers_ended is None:
            self.transfers_ended = time.monotonic()
        count_creates = functools.partial(_creates_left, self.ctx, uploading)

        def poll_due() -> bool:
            return bool(
                self.watched
                and not self.claims.hold_polls(self.watcher)
                and self.watcher.due(self.watcher.watched, creates_left=count_creates, uploading=uploading)
            )

        if poll_due():
            self._poll()
        elif self.watcher.may_list_early(self.watched):
            _listed(self.ctx, self.watcher.list_early)  # the pages behind the first, while the poll is held
            self.watched = self.watcher.watching()
            if poll_due():  # the hold ended while those pages were listed: the poll goes now, not next round
                self._poll()
        elif self.claims.due(
            self.watcher,
            creates_left=count_creates if uploading else None,
            quiet_from=time.monotonic() if uploading else self.transfers_ended,
        ):
            _listed(self.ctx, lambda: self.claims.confirm(self.watcher))
            self.watched = self.watcher.watching()

    def _poll(self) -> None:
        if _listed(self.ctx, self.watcher.poll_once):
            self.claims.covered(self.watcher)
        self.watched = self.watcher.watching()

    def finish_what_is_done(self) -> None:
        """The finish step of every item the service has finished (each tried once a run)."""
        _finish_done(self.ctx, self.finish_tried)

    def stop_on_bound(self) -> bool | None:
        """True once nothing runs, nothing waits and nothing is left to settle; False on the wait bound."""
        if self._idle() and not self.unsettled and not self.watched and not self.ctx.parked:
            # A webhook may have moved the last watched item to done after the finish step above; none can
            # arrive now (nothing is watched), so one more finish step leaves no item done.
            _finish_done(self.ctx, self.finish_tried)
            return True
        if self.bound.exceeded(working=not self._idle() or bool(self.ctx.parked)):
            return False
        return None


def advance_items(
    ctx: MigrateContext,
    submit: Submit,
    *,
    transfers: int,
    wait_timeout: float | None = None,
    tick: float = 0.2,
    on_tick: Callable[[], None] | None = None,
) -> bool:
    """Move every item on to its end state (ItemSchedule's rounds): transfer the pending, watch the uploaded,
    finish the done.

    Returns True when nothing is left in flight (every item reached an end state this run), False when the
    wait timed out or the run was stopped (the ledger keeps everything for the next run). wait_timeout counts
    from the moment the last transfer ended: a long migration is not cut short by its own upload time.
    """
    schedule = ItemSchedule(
        ctx, submit, transfers=transfers, wait_timeout=wait_timeout, tick=tick, on_tick=on_tick
    )
    return schedule.run()


def _unsettled(ctx: MigrateContext, parked: frozenset[str]) -> tuple[list[str], float]:
    """Keys left in creating but not parked, and the seconds until the youngest of their intents may be judged
    (0: all may now)."""
    items = [i for i in ctx.ledger.items([CREATING]) if i.key not in parked]
    waits = [settle_remaining_at(i.created_intent_at, i.key) for i in items if i.created_intent_at]
    return [i.key for i in items], max([0.0, *(w for w in waits if w > 0)]) if waits else 0.0


def _listed(ctx: MigrateContext, listing: Callable[[], object]) -> bool:
    """Run one listing (a poll, or claims confirmed); False when it failed (tried again a round later)."""
    try:
        listing()
    except VideoApiError as exc:
        if stops_run(exc):
            ctx.stop(exc)
            return False
        log.warning("status poll failed (%s); trying again next round", describe_failure(exc))
        return False
    return True


def _creates_left(ctx: MigrateContext, uploading: bool, at_most: int) -> int:
    """Items whose create is not answered yet (planned, or in creating), counted up to at_most (its callers
    pass one past the largest number they compare the count with), never past creates_bound(); 0 once no
    transfer runs."""
    if not uploading:
        return 0
    # count(), not counts(): the items_state index reads only these two states' entries; counts() groups the
    # whole index. Bounded too: asked every round while polls are held, a whole count read every planned
    # item's entry (O(run) a round, O(run^2) a run: the CPU per extra item grew 1.19x from 20k to 100k).
    return ctx.ledger.count([PLANNED, CREATING], at_most=min(at_most, creates_bound(ctx)))


def creates_bound(ctx: MigrateContext) -> int:
    """How far the creates left are counted at most: one more than any number their users compare them with
    (the limiter's budget, at most per_minute; its per-minute limit; a poll interval of creates at the
    per-second limit: Watcher._hold, Claims.due), so each comparison comes out as with the whole count. Each
    caller asks for less when it can (Watcher._hold: the budget it reads, and one)."""
    limiter = ctx.client.transport.limiter
    return max(limiter.per_minute, math.ceil(limiter.per_second * ctx.poll_seconds())) + 1


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

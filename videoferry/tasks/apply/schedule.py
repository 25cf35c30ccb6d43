"""Running the units of `videoferry apply` in dependency order: what to start, poll and settle next.

A unit is one operation on one video (a select: target fans out into one unit per video it found, keyed
`<op id>@<video id>`; an op: target on such an operation mirrors its units). A unit runs once everything it
references is done (its call made and its result video processed); many run at once, each call inside the
client's rate limits; one unit's failure only stops the units that wait for it.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable

from videoferry.connectors.errors import VideoApiError, stops_run
from videoferry.connectors.retry import describe_failure
from videoferry.state.applied import Unit
from videoferry.state.machine import UNIT_END_STATES, UnitState
from videoferry.tasks.apply.context import ApplyContext
from videoferry.tasks.apply.unit import fail_unit, poll_status, replan
from videoferry.tasks.lookup import Postponed
from videoferry.tasks.scheduling import Handle, Schedule, WaitBound, when_done

log = logging.getLogger(__name__)

#: How often one unit's reconcile may be postponed in a run (the listing failing, or too young to tell)
#: before it is left running for the next run; and the pause before the next try.
MAX_POSTPONES = 30
POSTPONE_PAUSE = 2.0


Submit = Callable[[Unit], Handle]


def prepare(ctx: ApplyContext, keys: set[str]) -> None:
    """Units of this file that an earlier run left failed are tried again (retry like a rerun of migrate)."""
    for unit in ctx.ledger.units([UnitState.FAILED]):
        if unit.unit_key in keys:
            replan(ctx, unit)


class UnitSchedule(Schedule):
    """What happens next to each unit of an apply run, round after round (tasks/scheduling.py's phases).

    settle leftovers: units an earlier run left running (an intent without an outcome) are started alone,
    before any new call: a new create could otherwise land where their lookup searches. start what can
    start: units whose references are all done (a unit whose reference failed fails, blocked), `transfers`
    at a time; a unit whose outcome could not be told yet is tried again after POSTPONE_PAUSE, at most
    MAX_POSTPONES times a run. poll what waits: each processing unit's video, one status read per poll
    interval. finish what is done: nothing (a unit is done once its video is). stop on bound: every unit in
    an end state, the wait bound, or nothing left that can end (postponed for good, or waiting for a unit
    that will not come).
    """

    def __init__(
        self,
        ctx: ApplyContext,
        submit: Submit,
        keys: set[str],
        *,
        transfers: int,
        wait_timeout: float | None,
        tick: float,
    ) -> None:
        super().__init__(ctx.abort, tick=tick)
        self.ctx = ctx
        self.submit = submit
        self.keys = keys
        self.transfers = transfers
        self.bound = WaitBound(wait_timeout)
        self.in_flight: dict[str, Handle] = {}
        self.not_before: dict[str, float] = {}
        self.postponed: Counter[str] = Counter()
        self.polled: dict[str, float] = {}
        # Every unit of the run as the ledger has it: read whole once, then only what the journal says moved
        # (a round's cost follows what changed, not the run's size). open_units: those not in an end state,
        # in plan order; processing: those waiting for the service.
        every, self.cursor = ctx.ledger.units_with_cursor()
        self.units: dict[str, Unit] = {}
        self.open_units: dict[str, Unit] = {}
        self.processing: dict[str, Unit] = {}
        self._take(u for u in every if u.unit_key in keys)
        self.startable = 0
        self.leftover = {k for k, u in self.units.items() if u.state == UnitState.RUNNING}

    def collect(self) -> None:
        """The units whose task ended (a call answered processing: its first status read a poll later), then
        every unit as the ledger has it now."""
        for key, handle in list(self.in_flight.items()):
            if handle.done():
                del self.in_flight[key]
                if self._collect(key, handle) == UnitState.PROCESSING:
                    self.polled[key] = time.monotonic()
        changed, self.cursor = self.ctx.ledger.units_changed_since(self.cursor)
        self._take(u for u in changed if u.unit_key in self.keys)

    def _take(self, changed: Iterable[Unit]) -> None:
        """Keep these units' new state (an open unit keeps its place in plan order)."""
        for unit in changed:
            key = unit.unit_key
            self.units[key] = unit
            if unit.state in UNIT_END_STATES:
                self.open_units.pop(key, None)
            else:
                self.open_units[key] = unit
            if unit.state == UnitState.PROCESSING:
                self.processing[key] = unit
            else:
                self.processing.pop(key, None)

    def _collect(self, key: str, handle: Handle) -> str | None:
        """The state a finished unit task left (None when it raised: postponed or crashed)."""
        try:
            return str(handle.result())
        except Postponed:
            self.postponed[key] += 1
            self.not_before[key] = time.monotonic() + POSTPONE_PAUSE
        except Exception as exc:  # a surprise in one unit is recorded on it; the others go on
            log.exception("unit %s: crashed", key)
            unit = self.ctx.ledger.unit(key)
            if unit is not None and unit.state in (UnitState.PLANNED, UnitState.PROCESSING):
                fail_unit(self.ctx, key, "internal", f"internal error: {type(exc).__name__}")
            # a unit left running has an intent without an outcome: it is reconciled, never failed blind
        return None

    def busy(self) -> bool:
        """Whether a unit's task still runs."""
        return bool(self.in_flight)

    def settle_leftovers(self) -> None:
        """The units an earlier run left running, while any of them can still be settled this run."""
        self.leftover = {
            k
            for k in self.leftover
            if self.units[k].state == UnitState.RUNNING and self.postponed[k] < MAX_POSTPONES
        }

    def start_what_can_start(self) -> None:
        """Every unit whose references are done, the leftovers alone first, `transfers` at a time."""
        now = time.monotonic()
        self.startable = 0
        for unit in self.open_units.values():  # (only collect changes open_units)
            if self.startable and len(self.in_flight) >= self.transfers:
                break  # nothing more can start this round; the rest is looked at when there is room
            key = unit.unit_key
            if self.stop.is_set() or key in self.in_flight or unit.state == UnitState.PROCESSING:
                continue
            if self.postponed[key] >= MAX_POSTPONES:
                continue  # left running for the next run: its outcome could not be told
            blocked = _blocked_by(unit, self.units)
            if blocked is not None:
                fail_unit(self.ctx, key, "blocked", blocked)
                continue
            if not all(
                self.units.get(d) is not None and self.units[d].state == UnitState.DONE for d in unit.depends
            ):
                continue
            self.startable += 1
            if self.leftover and key not in self.leftover:
                continue
            if len(self.in_flight) < self.transfers and now >= self.not_before.get(key, 0.0):
                handle = self.submit(unit)
                self.in_flight[key] = handle
                when_done(handle, self.nudge)  # its end begins the next round: room for the next unit

    def poll_what_waits(self) -> None:
        """One status read of each processing unit's video a poll interval after the last one."""
        now = time.monotonic()
        for unit in list(self.processing.values()):
            if self.stop.is_set() or unit.unit_key in self.in_flight:
                continue
            if now - self.polled.get(unit.unit_key, 0.0) >= self.ctx.poll_seconds():
                self.polled[unit.unit_key] = now
                try:
                    poll_status(self.ctx, unit)
                except VideoApiError as exc:  # one failed read never ends the run: read again next interval
                    if stops_run(exc):
                        self.ctx.stop(exc)
                        return
                    log.warning(
                        "unit %s: status read failed (%s); trying again next interval",
                        unit.unit_key,
                        describe_failure(exc),
                    )

    def finish_what_is_done(self) -> None:
        """Nothing: a unit is done once its video is (poll_what_waits moves it)."""

    def stop_on_bound(self) -> bool | None:
        """True once no unit is open nor running; False on the wait bound or when nothing left can end."""
        if not self.open_units and not self.in_flight:
            return True
        working = bool(self.in_flight or self.startable)
        if working or self.processing:
            return False if self.bound.exceeded(working=working) else None
        return False  # what is left is postponed for good or waits for something that will not come


def advance_units(
    ctx: ApplyContext,
    submit: Submit,
    keys: set[str],
    *,
    transfers: int,
    wait_timeout: float | None = None,
    tick: float = 0.1,
) -> bool:
    """Run every unit of `keys` to an end state (UnitSchedule's rounds); True when all did, False on a stop,
    the wait bound, or nothing left that can end."""
    return UnitSchedule(ctx, submit, keys, transfers=transfers, wait_timeout=wait_timeout, tick=tick).run()


def _blocked_by(unit: Unit, units: dict[str, Unit]) -> str | None:
    """Why a unit can never run in this run: something it waits for failed or is not planned."""
    for dep in unit.depends:
        other = units.get(dep)
        if other is None:
            return f"waits for op:{dep}, which is not planned in this run"
        if other.state == UnitState.FAILED:
            return f"waits for op:{dep}, which failed ({other.error_code}: {other.error_message})"
    return None

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
from collections.abc import Callable
from typing import Protocol

from state.applied import Unit
from state.machine import UNIT_END_STATES, UnitState
from tasks.apply.context import ApplyContext
from tasks.apply.unit import fail_unit, poll_status, replan
from tasks.lookup import Postponed

log = logging.getLogger(__name__)

#: How often one unit's reconcile may be postponed in a run (the listing failing, or too young to tell)
#: before it is left running for the next run; and the pause before the next try.
MAX_POSTPONES = 30
POSTPONE_PAUSE = 2.0


class Handle(Protocol):
    """A running unit (a concurrent.futures.Future)."""

    def done(self) -> bool: ...

    def result(self) -> str: ...


Submit = Callable[[Unit], Handle]


def prepare(ctx: ApplyContext, keys: set[str]) -> None:
    """Units of this file that an earlier run left failed are tried again (retry like a rerun of migrate)."""
    for unit in ctx.ledger.units([UnitState.FAILED]):
        if unit.unit_key in keys:
            replan(ctx, unit)


def advance_units(
    ctx: ApplyContext,
    submit: Submit,
    keys: set[str],
    *,
    transfers: int,
    wait_timeout: float | None = None,
    tick: float = 0.1,
) -> bool:
    """Run every unit of `keys` to an end state; True when all did, False on a stop or the wait bound."""
    in_flight: dict[str, Handle] = {}
    not_before: dict[str, float] = {}
    postponed: Counter[str] = Counter()
    polled: dict[str, float] = {}
    waiting_since: float | None = None
    # Units an earlier run left running (an intent without an outcome) settle before any new call starts:
    # a new create could otherwise land where their lookup searches.
    leftover = {u.unit_key for u in ctx.ledger.units([UnitState.RUNNING]) if u.unit_key in keys}
    while True:
        for key, handle in list(in_flight.items()):
            if handle.done():
                del in_flight[key]
                if _collect(ctx, key, handle, not_before, postponed) == UnitState.PROCESSING:
                    polled[key] = time.monotonic()  # its call's answer just said so: read it a poll later
        units = {u.unit_key: u for u in ctx.ledger.units() if u.unit_key in keys}
        open_units = [u for u in units.values() if u.state not in UNIT_END_STATES]
        if ctx.abort.is_set():
            if not in_flight:
                return False
        elif not open_units and not in_flight:
            return True
        now = time.monotonic()
        startable = 0
        leftover = {
            k for k in leftover if units[k].state == UnitState.RUNNING and postponed[k] < MAX_POSTPONES
        }
        for unit in open_units:
            if ctx.abort.is_set() or unit.unit_key in in_flight:
                continue
            if unit.state == UnitState.PROCESSING:
                if now - polled.get(unit.unit_key, 0.0) >= ctx.poll_interval:
                    polled[unit.unit_key] = now
                    poll_status(ctx, unit)
                continue
            if postponed[unit.unit_key] >= MAX_POSTPONES:
                continue  # left running for the next run: its outcome could not be told
            blocked = _blocked_by(unit, units)
            if blocked is not None:
                fail_unit(ctx, unit.unit_key, "blocked", blocked)
                continue
            if not all(units.get(d) is not None and units[d].state == UnitState.DONE for d in unit.depends):
                continue
            startable += 1
            if leftover and unit.unit_key not in leftover:
                continue
            if len(in_flight) < transfers and now >= not_before.get(unit.unit_key, 0.0):
                in_flight[unit.unit_key] = submit(unit)
        if in_flight or startable:
            waiting_since = None
        elif any(u.state == UnitState.PROCESSING for u in open_units):
            waiting_since = waiting_since or now
            if wait_timeout is not None and now - waiting_since > wait_timeout:
                log.warning("stopped waiting for processing after %.0f s; rerun to go on", wait_timeout)
                return False
        elif not in_flight and not any(u.state == UnitState.PROCESSING for u in open_units):
            return False  # what is left is postponed for good or waits for something that will not come
        ctx.abort.wait(tick)


def _collect(
    ctx: ApplyContext, key: str, handle: Handle, not_before: dict[str, float], postponed: Counter[str]
) -> str | None:
    """The state a finished unit task left (None when it raised: postponed or crashed)."""
    try:
        return handle.result()
    except Postponed:
        postponed[key] += 1
        not_before[key] = time.monotonic() + POSTPONE_PAUSE
    except Exception as exc:  # a surprise in one unit is recorded on it; the others go on
        log.exception("unit %s: crashed", key)
        unit = ctx.ledger.unit(key)
        if unit is not None and unit.state in (UnitState.PLANNED, UnitState.PROCESSING):
            fail_unit(ctx, key, "internal", f"internal error: {type(exc).__name__}")
        # a unit left running has an intent without an outcome: it is reconciled, never failed blind
    return None


def _blocked_by(unit: Unit, units: dict[str, Unit]) -> str | None:
    """Why a unit can never run in this run: something it waits for failed or is not planned."""
    for dep in unit.depends:
        other = units.get(dep)
        if other is None:
            return f"waits for op:{dep}, which is not planned in this run"
        if other.state == UnitState.FAILED:
            return f"waits for op:{dep}, which failed ({other.error_code}: {other.error_message})"
    return None

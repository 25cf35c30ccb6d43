"""The running half of `videoferry apply`: units planned from a resolved file, run in dependency order.

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

from core.operation import ConcatParams, OperationSpec, OpKind, TargetKind
from state.applied import UNIT_OWNER, Unit, UnitPlan
from state.machine import (
    UNIT_DONE,
    UNIT_END_STATES,
    UNIT_FAILED,
    UNIT_PLANNED,
    UNIT_PROCESSING,
    UNIT_RUNNING,
)
from tasks.apply_context import ApplyContext
from tasks.apply_plan import ApplyPlan, Refusal
from tasks.apply_unit import fail_unit, poll_status, replan
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


def unit_plans(
    plan: ApplyPlan, specs: dict[str, OperationSpec], owned: Callable[[list[str]], dict[str, str]]
) -> tuple[list[UnitPlan], list[Refusal]]:
    """The units of a resolved plan, and rows refused on the way (a selector finding only our own results).

    owned maps video ids to the ledger entries that own them: a selector never picks a video an operation
    of this ledger made (a rerun of `select:... copy` must not copy the copies).
    """
    units_of: dict[str, list[str]] = {}
    plans: list[UnitPlan] = []
    refused: list[Refusal] = []
    for p in plan.planned:
        spec = specs[p.op_id]
        extra = _single_deps(spec)
        keys: list[tuple[str, str | None, list[str]]]
        if spec.target.kind is TargetKind.OP:
            base = spec.target.value
            keys = [(p.op_id + k[len(base) :], None, [k]) for k in units_of.get(base, [])]
        elif spec.target.kind is TargetKind.SELECT:
            made = owned(list(p.video_ids))
            picked = [v for v in p.video_ids if not _made_by_op(made.get(v))]
            if not picked:
                refused.append(
                    Refusal(
                        p.row, "target", p.target, "selects only videos this ledger's operations made", True
                    )
                )
                continue
            keys = [(f"{p.op_id}@{v}", v, []) for v in picked]
        else:
            keys = [(p.op_id, p.video_ids[0] if p.video_ids else None, [])]
        units_of[p.op_id] = [k for k, _, _ in keys]
        for key, video, deps in keys:
            plans.append(
                UnitPlan(
                    unit_key=key,
                    op_id=p.op_id,
                    row=p.row,
                    kind=p.kind.value,
                    target=p.target,
                    video_id=video,
                    depends=tuple(dict.fromkeys([*deps, *extra])),
                    params=p.params,
                )
            )
    return plans, refused


def _made_by_op(owner: str | None) -> bool:
    """Whether an owner (state.applied.owners) is an apply unit rather than a migrated item."""
    return owner is not None and owner.startswith(UNIT_OWNER)


def _single_deps(spec: OperationSpec) -> list[str]:
    """The units a concat's op: prepend/append wait for (those operations act on one video)."""
    if not isinstance(spec.params, ConcatParams):
        return []
    return [t.value for t in (*spec.params.prepend, *spec.params.append) if t.kind is TargetKind.OP]


def refuse_deletes(plan: ApplyPlan) -> list[Refusal]:
    """Without --allow-delete: every delete row refused, saying how many videos it would delete."""
    refused = []
    for p in plan.delete_ops:
        count = len(p.video_ids) or 1
        reason = f"delete refused without --allow-delete (it would delete {count} video{'s' * (count != 1)})"
        refused.append(Refusal(p.row, "op", "delete", reason))
    plan.planned = [p for p in plan.planned if p.kind is not OpKind.DELETE]
    return refused


def prepare(ctx: ApplyContext, keys: set[str]) -> None:
    """Units of this file that an earlier run left failed are tried again (retry like a rerun of migrate)."""
    for unit in ctx.ledger.units([UNIT_FAILED]):
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
    leftover = {u.unit_key for u in ctx.ledger.units([UNIT_RUNNING]) if u.unit_key in keys}
    while True:
        for key, handle in list(in_flight.items()):
            if handle.done():
                del in_flight[key]
                if _collect(ctx, key, handle, not_before, postponed) == UNIT_PROCESSING:
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
        leftover = {k for k in leftover if units[k].state == UNIT_RUNNING and postponed[k] < MAX_POSTPONES}
        for unit in open_units:
            if ctx.abort.is_set() or unit.unit_key in in_flight:
                continue
            if unit.state == UNIT_PROCESSING:
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
            if not all(units.get(d) is not None and units[d].state == UNIT_DONE for d in unit.depends):
                continue
            startable += 1
            if leftover and unit.unit_key not in leftover:
                continue
            if len(in_flight) < transfers and now >= not_before.get(unit.unit_key, 0.0):
                in_flight[unit.unit_key] = submit(unit)
        if in_flight or startable:
            waiting_since = None
        elif any(u.state == UNIT_PROCESSING for u in open_units):
            waiting_since = waiting_since or now
            if wait_timeout is not None and now - waiting_since > wait_timeout:
                log.warning("stopped waiting for processing after %.0f s; rerun to go on", wait_timeout)
                return False
        elif not in_flight and not any(u.state == UNIT_PROCESSING for u in open_units):
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
        if unit is not None and unit.state in (UNIT_PLANNED, UNIT_PROCESSING):
            fail_unit(ctx, key, "internal", f"internal error: {type(exc).__name__}")
        # a unit left running has an intent without an outcome: it is reconciled, never failed blind
    return None


def _blocked_by(unit: Unit, units: dict[str, Unit]) -> str | None:
    """Why a unit can never run in this run: something it waits for failed or is not planned."""
    for dep in unit.depends:
        other = units.get(dep)
        if other is None:
            return f"waits for op:{dep}, which is not planned in this run"
        if other.state == UNIT_FAILED:
            return f"waits for op:{dep}, which failed ({other.error_code}: {other.error_message})"
    return None

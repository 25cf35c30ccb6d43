"""One apply unit: its call exactly once (tasks/exactly_once.py), then the unit's state; its status polls."""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any

from connectors.errors import AuthError, NotFoundError, VideoApiError, WorkspaceRefusedError, stops_run
from connectors.ledger_errors import RemoteLedgerLostError
from connectors.sources import SourceError
from core.item import COMPLETE_STATES
from core.operation import ConcatParams, OperationSpec, OpKind, Target, TargetKind
from core.tidy import title_group_key
from state.applied import Unit
from state.errors import LedgerError
from state.machine import OpStatus, UnitState
from state.models import Op
from tasks.apply.calls import (
    LOOKED_UP_KINDS,
    PROCESSED_KINDS,
    Called,
    CutUnnamed,
    ResultUnnamed,
    VideoMissing,
    before_of,
    call,
    reconcile,
    result_parent,
    result_title,
)
from tasks.apply.context import ApplyContext
from tasks.apply.gap import gap_check, in_place
from tasks.apply.values import SETS, values_of
from tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, Waits, exactly_once, failure_code, look_up
from tasks.gap import GapAmbiguous, GapListingFailed
from tasks.lookup import Postponed
from tasks.stop import UploadStopped

log = logging.getLogger(__name__)

#: How often a lost answer's lookup looks again while it cannot tell (a young intent, a failed listing).
POLL_SECONDS = 1.0

#: What a unit's result video is called in its done line.
_TERMINAL_FAILED = ("error", "aborted")


class Blocked(Exception):
    """A unit cannot run: what it references failed or is not there (the message says which)."""


def target_unit(unit: Unit, spec: OperationSpec) -> str | None:
    """The unit whose result video this unit acts on (op: targets), or None."""
    if spec.target.kind is not TargetKind.OP:
        return None
    suffix = unit.unit_key[len(unit.op_id) :]  # "" or "@<video>" for a fanned-out selector
    return spec.target.value + suffix


def resolve(ctx: ApplyContext, unit: Unit, spec: OperationSpec) -> tuple[str, dict[str, str]]:
    """The video this unit acts on and the ids of its prepend/append targets (Blocked when not known)."""
    video_id = unit.video_id
    dep = target_unit(unit, spec)
    if dep is not None:
        video_id = _result_of(ctx, dep)
    for ref in spec.refs:
        if ref.kind is TargetKind.KEY:
            item = ctx.ledger.get(ref.value)
            if item is None or item.state not in COMPLETE_STATES or not item.video_id:
                state = item.state if item is not None else "not in the ledger"
                raise Blocked(f"{ref}: the migrated item is {state}, not done (finish the migration first)")
            if ref == spec.target and video_id is None:
                video_id = item.video_id
    if video_id is None:
        raise Blocked(f"{spec.target}: no video known")
    others: dict[str, str] = {}
    if isinstance(spec.params, ConcatParams):
        for ref in (*spec.params.prepend, *spec.params.append):
            others[str(ref)] = _video_of(ctx, ref)
    return video_id, others


def _video_of(ctx: ApplyContext, ref: Target) -> str:
    if ref.kind is TargetKind.OP:
        return _result_of(ctx, ref.value)
    if ref.kind is TargetKind.KEY:
        item = ctx.ledger.get(ref.value)
        if item is None or not item.video_id:
            raise Blocked(f"{ref}: the migrated item has no video")
        return item.video_id
    return ref.value


def _result_of(ctx: ApplyContext, key: str) -> str:
    unit = ctx.ledger.unit(key)
    if unit is None or unit.state != UnitState.DONE or not unit.result_id:
        raise Blocked(f"op:{key} has no finished video")
    return unit.result_id


#: What a unit's call may fail with, written failed: the service's refusals, an unreadable source, a cut
#: whose accepted result cannot be found.
REFUSED = (VideoApiError, SourceError, CutUnnamed)


class VideoGone(Exception):
    """The video a unit acted on vanished while its lost answer was looked up: the outcome cannot be told."""

    code = "not_found"


def run_unit(ctx: ApplyContext, unit: Unit) -> str:
    """Bring one unit as far as its call goes (done, processing, failed, or running when postponed).

    Calls on one video run one at a time (its lock is held from settling an earlier intent to the outcome).
    """
    spec = ctx.specs[unit.op_id]
    try:
        video_id, others = resolve(ctx, unit, spec)
    except Blocked as exc:
        fail_unit(ctx, unit.unit_key, "blocked", str(exc))
        return UnitState.FAILED
    with ctx.video_lock(video_id):
        ops = ctx.ledger.ops(op_key=unit.unit_key)
        if unit.state == UnitState.RUNNING and ops:
            caught_up = _catch_up(ctx, unit.unit_key, spec, ops[-1])
            if caught_up is not None:
                return caught_up
        return _call_once(ctx, unit.unit_key, spec, video_id, others)


def _catch_up(ctx: ApplyContext, key: str, spec: OperationSpec, last: Op) -> str | None:
    """A unit left running whose last op has its outcome (the unit's move was not written): move it now.
    None when the op is still open (the exactly-once step settles it) or void (the call is repeated)."""
    if last.status == OpStatus.DONE:
        return _move_after(ctx, key, spec, _called_from(ctx, last))
    if last.status == OpStatus.FAILED:
        fail_unit(ctx, key, last.error_code or "failed", last.error_message or "the call failed")
        return UnitState.FAILED
    return None


def _call_once(
    ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, others: dict[str, str]
) -> str:
    """The unit's call, exactly once (tasks/exactly_once.py; its gap step: tasks/apply/gap.gap_check), then
    the unit's move."""
    journal = UnitJournal(ctx, key, spec, video_id, others)
    lookup = unit_lookup(ctx, spec, video_id)
    try:
        called = exactly_once(
            journal,
            lambda: _make_call(ctx, journal, spec, others),
            lookup=lookup,
            refused=REFUSED,
            waits=Waits(lost=True),
            stop=ctx.abort,
            hold=journal.create_lock,
            gap=gap_check(ctx, key, spec, video_id, others),  # the ledger may have missed this call
        )
    except GapAmbiguous:
        why = "the ledger may have missed this call (replication gap); several videos could be its result"
        fail_unit(ctx, key, "gap_ambiguous", f"{why}: check them by hand, then rerun")
        return UnitState.FAILED
    except GapListingFailed as exc:
        ctx.stop(exc)
        return UnitState.PLANNED
    except VideoMissing:
        fail_unit(ctx, key, "not_found", f"video {video_id} does not exist")
        return UnitState.FAILED
    except VideoGone as exc:  # an intent is open and cannot be told: failed, never repeated blind
        intent = journal.open_intent()
        if intent is not None:
            journal.write_failed(intent, exc)
        fail_unit(ctx, key, exc.code, str(exc))
        return UnitState.FAILED
    except NotMade:
        ctx.ledger.move_unit(key, UnitState.PLANNED, ctx.run_id, "the call did not take effect: made again")
        return UnitState.PLANNED
    except AuthError as exc:  # nothing was done; the intent stays for the next run to settle
        ctx.stop(exc)
        return UnitState.RUNNING
    except WorkspaceRefusedError as exc:  # nothing was made (the intent is void): planned for the rerun
        ctx.ledger.move_unit(
            key, UnitState.PLANNED, ctx.run_id, f"not made: {exc.code} (the workspace refused)"
        )
        ctx.stop(exc)
        return UnitState.PLANNED
    except RemoteLedgerLostError as exc:  # refused unsent: the lease may have ended; the run stops
        ctx.stop(exc)
        left = ctx.ledger.unit(key)
        return left.state if left is not None else UnitState.RUNNING
    except UploadStopped:  # the run stops mid-upload: the intent stays for the next run to settle
        return UnitState.RUNNING
    except REFUSED as exc:
        code = failure_code(exc) or "failed"
        fail_unit(ctx, key, code, str(exc), getattr(exc, "request_id", None))
        return UnitState.FAILED
    return _move_after(ctx, key, spec, called)


def _make_call(
    ctx: ApplyContext, journal: UnitJournal, spec: OperationSpec, others: dict[str, str]
) -> Called:
    """The unit's call. A cut accepted with no result named is looked up here, inside its exactly-once
    step: found, it is the outcome; not found, CutUnnamed (failed: never cut again). A delete repeated after
    a void intent that finds the video gone was done by the earlier call."""
    video_id = str(journal.video_id)
    try:
        return call(ctx, spec, video_id, others, dict(journal.before) if journal.before is not None else None)
    except ResultUnnamed:
        assert journal.written is not None
        lookup = unit_lookup(ctx, spec, video_id, postpone_errors=False)
        found = look_up(lookup, journal.written, wait=True, stop=ctx.abort)
        if found is None:
            raise CutUnnamed(
                f"the service accepted the cut but its answer named no video, {video_id} is unchanged and no"
                " new video was found by listing: check the project by hand (not cut again)"
            ) from None
        return found
    except NotFoundError:
        if spec.kind is OpKind.DELETE and journal.repeat:
            return Called(None, False, "already deleted (an earlier call did it)")
        raise


class UnitJournal(OpJournal[Called]):
    """A unit's call in the ledger's ops table (op_key: the unit's key). Writing the intent takes the before
    snapshot and moves the unit to running; an auth refusal is not written (nothing was done: the intent
    stays, and the next run settles it)."""

    def __init__(
        self, ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, others: dict[str, str]
    ) -> None:
        def outcome(called: Called) -> tuple[Any, tuple[str, str] | None]:
            video = called.video
            stored = {
                "video_id": _result_id(ctx, key, spec, called),
                "detail": called.detail,
                "status": video.status if video else None,
            }
            return stored, ("video", video.id) if called.created and video is not None else None

        # What the call sets, by value (tasks/apply/values.py): check explains a difference with it.
        params: dict[str, Any] = {"video_id": video_id, **others, SETS: values_of(spec)}
        super().__init__(
            ctx.ledger, ctx.run_id, key, spec.kind.value, params, video_id=video_id, outcome=outcome
        )
        self.ctx = ctx
        self.spec = spec
        #: Whether an earlier call of this unit was made and voided (a repeated delete may find it done).
        self.repeat = False

    def write_intent(self) -> Intent:
        """The before snapshot, then the intent (the unit is running)."""
        try:
            self.before = before_of(self.ctx, self.spec, str(self.video_id))
        except NotFoundError:
            raise VideoMissing(self.video_id) from None
        self.repeat = any(op.status == OpStatus.VOID for op in self.ledger.ops(op_key=self.op_key))
        at = datetime.now(UTC)
        op_id = self.ledger.unit_intent(
            self.op_key, self.kind, self.params, self.run_id, video_id=self.video_id, before=self.before
        )
        self.written = Intent(op_id, at)
        if in_place(self.spec):  # only its snapshot tells a lost answer: the intent must outlive the machine
            self.ctx.durable()
        return self.written

    def write_failed(self, intent: Intent, exc: BaseException) -> None:
        """intent -> failed (not for an auth refusal: that intent stays open)."""
        if not isinstance(exc, AuthError):
            super().write_failed(intent, exc)

    def create_lock(self) -> AbstractContextManager[Any]:
        """Calls that may make a video hold the lock of where their result lands and of its title's
        core.tidy.title_group_key (titles a tidying service could make alike share one) until the outcome is
        known, so a lost answer's lookup only ever finds what its own call made."""
        before = self.before
        if before is None:
            return nullcontext()
        parent = result_parent(self.spec, dict(before))
        return self.ctx.create_lock(parent, title_group_key(result_title(self.spec, dict(before))))


def unit_lookup(
    ctx: ApplyContext, spec: OperationSpec, video_id: str, *, postpone_errors: bool = True
) -> Lookup[Called]:
    """What a unit's call did when its answer was lost (calls.reconcile): a create found by listing, an
    in-place call by its before snapshot; calls the same whatever happened are void at once (repeatable).
    A failed listing postpones (journalled; an auth error stops the run) unless postpone_errors is False."""

    def find(intent: Intent) -> Called | None:
        op = ctx.ledger.get_op(int(intent.ref))
        assert op is not None  # the intent being settled
        try:
            return reconcile(ctx, spec, video_id, op)
        except NotFoundError:
            raise VideoGone(f"video {video_id} is gone; the call's outcome cannot be told") from None
        except VideoApiError as exc:
            if not postpone_errors:
                raise
            if stops_run(exc):
                ctx.stop(exc)
            else:
                ctx.ledger.note(op.op_key or "", ctx.run_id, f"reconcile postponed: {exc}")
            raise Postponed(op.op_key or "") from None

    looked_up = spec.kind in LOOKED_UP_KINDS
    why = "the call did not take effect" if looked_up else "repeatable by content"
    return Lookup(find, listing=looked_up, poll_every=POLL_SECONDS, absent=why)


def _called_from(ctx: ApplyContext, op: Op) -> Called:
    result = op.result if isinstance(op.result, dict) else {}
    video_id = result.get("video_id")
    video = ctx.client.videos.get(video_id) if video_id else None
    return Called(video, op.created_id is not None, str(result.get("detail") or "done"))


def get_unit(ctx: ApplyContext, key: str) -> Unit:
    """The unit with this key (LedgerError when it is not in the ledger)."""
    unit = ctx.ledger.unit(key)
    if unit is None:
        raise LedgerError(f"unit {key!r} is not in the ledger")
    return unit


def _result_id(ctx: ApplyContext, key: str, spec: OperationSpec, called: Called) -> str | None:
    """The video a unit leaves: the one its call answered with, else the unit's own (none for a delete)."""
    if called.video is not None:
        return called.video.id
    return None if spec.kind is OpKind.DELETE else get_unit(ctx, key).video_id


def _move_after(ctx: ApplyContext, key: str, spec: OperationSpec, called: Called) -> str:
    """The unit after its call's outcome: processing while its result video is not done, else done."""
    video = called.video
    status = video.status if video is not None else None
    waits = spec.kind in PROCESSED_KINDS and status != "done"
    state = UnitState.PROCESSING if waits else UnitState.DONE
    values = {"result_id": _result_id(ctx, key, spec, called), "detail": called.detail}
    ctx.ledger.move_unit(key, state, ctx.run_id, called.detail, values=values)
    return state


def fail_unit(
    ctx: ApplyContext, key: str, code: str | int, message: str, request_id: str | None = None
) -> None:
    """Record a unit as failed with its code and message (a ledger error is logged, not raised)."""
    try:
        ctx.ledger.move_unit(
            key,
            UnitState.FAILED,
            ctx.run_id,
            message,
            values={"error_message": message},
            error_code=code,
            request_id=request_id,
        )
    except LedgerError:
        log.exception("unit %s: could not record the failure", key)


def replan(ctx: ApplyContext, unit: Unit) -> None:
    """A failed unit of an earlier run is tried again: waiting again when its call was done and only the
    wait failed (stopped, or a listing), else from the start (its video failed processing, or the call)."""
    ops = ctx.ledger.ops(op_key=unit.unit_key)
    call_done = bool(ops) and ops[-1].status == OpStatus.DONE and unit.result_id is not None
    redo = unit.error_code in ("video_error", "video_aborted")
    to = UnitState.PROCESSING if call_done and not redo else UnitState.PLANNED
    ctx.ledger.move_unit(unit.unit_key, to, ctx.run_id, "tried again by a new run")


def poll_status(ctx: ApplyContext, unit: Unit) -> str:
    """One status read of a processing unit's video: done, failed (error, aborted, gone) or processing."""
    assert unit.result_id is not None
    try:
        video = ctx.client.videos.get(unit.result_id)
    except NotFoundError:
        fail_unit(ctx, unit.unit_key, "not_found", f"video {unit.result_id} vanished while processing")
        return UnitState.FAILED
    if video.status == "done":
        ctx.ledger.move_unit(unit.unit_key, UnitState.DONE, ctx.run_id, f"video {video.id} is done")
        return UnitState.DONE
    if video.status in _TERMINAL_FAILED:
        fail_unit(
            ctx, unit.unit_key, f"video_{video.status}", f"the service's processing ended in {video.status}"
        )
        return UnitState.FAILED
    return UnitState.PROCESSING


__all__ = ["Blocked", "fail_unit", "poll_status", "replan", "resolve", "run_unit", "target_unit"]

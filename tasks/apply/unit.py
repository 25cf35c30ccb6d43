"""One apply unit, exactly once: intent before the call, outcome right after, reconcile before any repeat."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, TypeVar

from connectors.errors import AuthError, NotFoundError, UnknownOutcomeError, VideoApiError
from connectors.sources import SourceError
from core.item import COMPLETE_STATES
from core.operation import ConcatParams, OperationSpec, OpKind, Target, TargetKind
from state.applied import Unit
from state.errors import LedgerError
from state.machine import (
    OP_DONE,
    OP_FAILED,
    OP_INTENT,
    OP_VOID,
    UNIT_DONE,
    UNIT_FAILED,
    UNIT_PLANNED,
    UNIT_PROCESSING,
    UNIT_RUNNING,
)
from state.models import Op
from tasks.apply.calls import PROCESSED_KINDS, Called, ResultUnnamed, before_of, call, reconcile
from tasks.apply.context import ApplyContext
from tasks.lookup import Postponed
from tasks.migrate.context import error_code

log = logging.getLogger(__name__)

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
    if unit is None or unit.state != UNIT_DONE or not unit.result_id:
        raise Blocked(f"op:{key} has no finished video")
    return unit.result_id


def run_unit(ctx: ApplyContext, unit: Unit) -> str:
    """Bring one unit as far as its call goes (done, processing, failed, or running when postponed)."""
    spec = ctx.specs[unit.op_id]
    try:
        video_id, others = resolve(ctx, unit, spec)
    except Blocked as exc:
        fail_unit(ctx, unit.unit_key, "blocked", str(exc))
        return UNIT_FAILED
    ops = ctx.ledger.ops(op_key=unit.unit_key)
    last = ops[-1] if ops else None
    if unit.state == UNIT_RUNNING and last is not None:
        with ctx.video_lock(video_id):
            settled = _settle_last(ctx, unit, spec, video_id, last)
        if settled is not None:
            return settled
    return _call(ctx, unit.unit_key, spec, video_id, others, repeat=any(o.status == OP_VOID for o in ops))


def _settle_last(ctx: ApplyContext, unit: Unit, spec: OperationSpec, video_id: str, last: Op) -> str | None:
    """A unit left running: finish what its last call established; None when the call must be made again."""
    key = unit.unit_key
    if last.status == OP_DONE:  # the outcome was written, the unit's move was not
        return _record(ctx, key, spec, _called_from(ctx, last), last.op_id, outcome_written=True)
    if last.status == OP_FAILED:
        fail_unit(ctx, key, last.error_code or "failed", last.error_message or "the call failed")
        return UNIT_FAILED
    if last.status == OP_INTENT:
        try:
            found = reconcile(ctx, spec, video_id, last)
        except NotFoundError:
            if spec.kind is OpKind.DELETE:
                found = None
            else:
                return _op_failed(ctx, key, last.op_id, NotFoundError("the video is gone"))
        except VideoApiError as exc:
            if isinstance(exc, AuthError):
                ctx.stop(str(exc), config_error=True)
            else:
                ctx.ledger.note(key, ctx.run_id, f"reconcile postponed: {exc}")
            raise Postponed(key) from None
        if found is not None:
            return _record(ctx, key, spec, found, last.op_id)
        why = "repeatable by content" if spec.kind not in PROCESSED_KINDS else "the call did not take effect"
        ctx.ledger.record_op_outcome(last.op_id, OP_VOID, error_message=why, run_id=ctx.run_id)
    return None


def _called_from(ctx: ApplyContext, op: Op) -> Called:
    result = op.result if isinstance(op.result, dict) else {}
    video_id = result.get("video_id")
    video = ctx.client.videos.get(video_id) if video_id else None
    return Called(video, op.created_id is not None, str(result.get("detail") or "done"))


def _call(
    ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, others: dict[str, str], *, repeat: bool
) -> str:
    with ctx.video_lock(video_id):
        return _call_locked(ctx, key, spec, video_id, others, repeat=repeat)


def _call_locked(
    ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, others: dict[str, str], *, repeat: bool
) -> str:
    try:
        before = before_of(ctx, spec, video_id)
    except NotFoundError:
        fail_unit(ctx, key, "not_found", f"video {video_id} does not exist")
        return UNIT_FAILED
    params: dict[str, Any] = {"video_id": video_id, **others}
    op_id = ctx.ledger.unit_intent(key, spec.kind.value, params, ctx.run_id, video_id=video_id, before=before)
    # Calls that may make a video hold the lock of their (parent, title) until the outcome is known.
    guard = (
        ctx.create_lock(before.get("folder_id") or before.get("project_id"), before.get("title"))
        if before is not None
        else nullcontext()
    )
    with guard:
        try:
            called = call(ctx, spec, video_id, others, before)
        except UnknownOutcomeError:
            log.info("unit %s: outcome unknown; reconciling", key)
            return _settle_unknown(ctx, key, spec, video_id, op_id, wait=before is not None)
        except ResultUnnamed:
            return _settle_unnamed(ctx, key, spec, video_id, op_id)
        except NotFoundError as exc:
            if spec.kind is OpKind.DELETE and repeat:
                return _record(
                    ctx, key, spec, Called(None, False, "already deleted (an earlier call did it)"), op_id
                )
            return _op_failed(ctx, key, op_id, exc)
        except SourceError as exc:
            message = str(exc)
            ctx.ledger.record_op_outcome(
                op_id, OP_FAILED, error_code="source", error_message=message, run_id=ctx.run_id
            )
            fail_unit(ctx, key, "source", message)
            return UNIT_FAILED
        except AuthError as exc:
            ctx.stop(str(exc), config_error=True)
            return UNIT_RUNNING
        except VideoApiError as exc:
            return _op_failed(ctx, key, op_id, exc)
        return _record(ctx, key, spec, called, op_id)


T = TypeVar("T")


def _until_known(ctx: ApplyContext, attempt: Callable[[], T], *, wait: bool) -> T:
    """attempt() until it can tell (no Postponed); with wait False, or once the run stops, Postponed rises."""
    while True:
        try:
            return attempt()
        except Postponed:
            if not wait or ctx.abort.wait(1.0):
                raise


def _settle_unknown(
    ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, op_id: int, *, wait: bool
) -> str:
    """Reconcile a call whose answer was just lost; with wait, until it can tell (the run may stop it)."""
    last = _op(ctx, op_id)
    unit = get_unit(ctx, key)
    settled = _until_known(ctx, lambda: _settle_last(ctx, unit, spec, video_id, last), wait=wait)
    if settled is not None:
        return settled
    ctx.ledger.move_unit(key, UNIT_PLANNED, ctx.run_id, "the call did not take effect: made again")
    return UNIT_PLANNED


def _settle_unnamed(ctx: ApplyContext, key: str, spec: OperationSpec, video_id: str, op_id: int) -> str:
    """An accepted cut whose answer named no result: find it (in place or new); never cut again."""
    last = _op(ctx, op_id)
    try:
        found = _until_known(ctx, lambda: reconcile(ctx, spec, video_id, last), wait=True)
    except VideoApiError as exc:
        return _op_failed(ctx, key, op_id, exc)
    if found is not None:
        return _record(ctx, key, spec, found, op_id)
    message = (
        f"the service accepted the cut but its answer named no video, {video_id} is unchanged and no new"
        " video was found by listing: check the project by hand (not cut again)"
    )
    ctx.ledger.record_op_outcome(op_id, OP_FAILED, error_code="cut_unnamed", error_message=message)
    fail_unit(ctx, key, "cut_unnamed", message)
    return UNIT_FAILED


def _op(ctx: ApplyContext, op_id: int) -> Op:
    op = ctx.ledger.get_op(op_id)
    assert op is not None  # written by this unit's intent a moment ago
    return op


def get_unit(ctx: ApplyContext, key: str) -> Unit:
    """The unit with this key (LedgerError when it is not in the ledger)."""
    unit = ctx.ledger.unit(key)
    if unit is None:
        raise LedgerError(f"unit {key!r} is not in the ledger")
    return unit


def _record(
    ctx: ApplyContext,
    key: str,
    spec: OperationSpec,
    called: Called,
    op_id: int,
    *,
    outcome_written: bool = False,
) -> str:
    """The call's outcome on its op row, then the unit: processing while its result video is not done."""
    video = called.video
    result_id = (
        video.id
        if video is not None
        else (None if spec.kind is OpKind.DELETE else get_unit(ctx, key).video_id)
    )
    if not outcome_written:
        ctx.ledger.record_op_outcome(
            op_id,
            OP_DONE,
            {"video_id": result_id, "detail": called.detail, "status": video.status if video else None},
            run_id=ctx.run_id,
            created_id=video.id if called.created and video is not None else None,
        )
    status = video.status if video is not None else None
    waits = spec.kind in PROCESSED_KINDS and status != "done"
    state = UNIT_PROCESSING if waits else UNIT_DONE
    values = {"result_id": result_id, "detail": called.detail}
    ctx.ledger.move_unit(key, state, ctx.run_id, called.detail, values=values)
    return state


def _op_failed(ctx: ApplyContext, key: str, op_id: int, exc: VideoApiError) -> str:
    code = error_code(exc)
    ctx.ledger.record_op_outcome(
        op_id,
        OP_FAILED,
        error_code=code,
        error_message=str(exc),
        request_id=exc.request_id,
        run_id=ctx.run_id,
    )
    fail_unit(ctx, key, code, str(exc), exc.request_id)
    return UNIT_FAILED


def fail_unit(
    ctx: ApplyContext, key: str, code: str | int, message: str, request_id: str | None = None
) -> None:
    """Record a unit as failed with its code and message (a ledger error is logged, not raised)."""
    try:
        ctx.ledger.move_unit(
            key,
            UNIT_FAILED,
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
    call_done = bool(ops) and ops[-1].status == OP_DONE and unit.result_id is not None
    redo = unit.error_code in ("video_error", "video_aborted")
    to = UNIT_PROCESSING if call_done and not redo else UNIT_PLANNED
    ctx.ledger.move_unit(unit.unit_key, to, ctx.run_id, "tried again by a new run")


def poll_status(ctx: ApplyContext, unit: Unit) -> str:
    """One status read of a processing unit's video: done, failed (error, aborted, gone) or processing."""
    assert unit.result_id is not None
    try:
        video = ctx.client.videos.get(unit.result_id)
    except NotFoundError:
        fail_unit(ctx, unit.unit_key, "not_found", f"video {unit.result_id} vanished while processing")
        return UNIT_FAILED
    if video.status == "done":
        ctx.ledger.move_unit(unit.unit_key, UNIT_DONE, ctx.run_id, f"video {video.id} is done")
        return UNIT_DONE
    if video.status in _TERMINAL_FAILED:
        fail_unit(
            ctx, unit.unit_key, f"video_{video.status}", f"the service's processing ended in {video.status}"
        )
        return UNIT_FAILED
    return UNIT_PROCESSING


__all__ = ["Blocked", "fail_unit", "poll_status", "replan", "resolve", "run_unit", "target_unit"]

"""Operations: a call's target and intent before it, its outcome and created object after, both journalled."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from core.redact import sanitize, scrub
from state.columns import dump
from state.db import fetch
from state.errors import InvalidTransition, LedgerError
from state.journal import op_event
from state.machine import OBJECT_KINDS, OP_IN_PLACE, OP_KINDS, OpStatus, check_op_transition


def record_intent(
    conn: sqlite3.Connection,
    now: str,
    owner_key: str | None,
    kind: str,
    params: Mapping[str, Any],
    *,
    run_id: str | None,
    target: tuple[str | None, str | None],
    op_key: str | None,
    before: Mapping[str, Any] | None,
) -> int:
    """Insert an operation in status intent (refused while the same op_key has an unknown outcome).

    target is (target_kind, target_id) as resolve_target() gives it; a video target also fills video_id.
    """
    target_kind, target_id = target
    video_id = target_id if target_kind == "video" else None
    if op_key is not None:
        query = "SELECT op_id FROM ops WHERE op_key = ? AND status = ?"
        open_ops = fetch(conn, query, (op_key, OpStatus.INTENT))
        if open_ops:
            raise InvalidTransition(
                f"op {op_key}",
                OpStatus.INTENT,
                OpStatus.INTENT,
                f"op {open_ops[0]['op_id']} has an unknown outcome: reconcile it first",
            )
    cursor = conn.execute(
        "INSERT INTO ops (op_key, item_key, video_id, target_kind, target_id, kind, params, before, status,"
        " run_id, intent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            op_key,
            owner_key,
            video_id,
            target_kind,
            target_id,
            kind,
            dump(sanitize(dict(params))),
            dump(dict(before)) if before else None,
            OpStatus.INTENT,
            run_id,
            now,
        ),
    )
    op_id = int(cursor.lastrowid or 0)
    op_event(
        conn,
        now,
        {"op_id": op_id, "item_key": owner_key},
        from_status=None,
        to_status=OpStatus.INTENT,
        run_id=run_id,
        message=f"{kind} intent" + (f" on {target_kind} {target_id}" if target_id else ""),
    )
    return op_id


def check_intent(kind: str, before: Mapping[str, Any] | None) -> None:
    """Refuse an unknown kind, and an in-place kind without its before snapshot (ValueError)."""
    if kind not in OP_KINDS:
        raise ValueError(f"unknown operation kind {kind!r}")
    if kind in OP_IN_PLACE and not before:
        raise ValueError(f"a {kind} intent needs the video's version/updated_at/duration (before=)")


def resolve_target(
    video_id: str | None, target_kind: str | None, target_id: str | None
) -> tuple[str | None, str | None]:
    """(target_kind, target_id) of an intent; video_id is short for a video target (ValueError on a clash)."""
    if video_id is not None:
        if target_kind not in (None, "video") or target_id not in (None, video_id):
            raise ValueError(f"video_id {video_id} names the target; target_kind / target_id disagree")
        return "video", video_id
    if target_kind is None:
        if target_id is not None:
            raise ValueError("a target_id needs its target_kind")
        return None, None
    if target_kind not in OBJECT_KINDS:
        raise ValueError(f"unknown target kind {target_kind!r} (expected one of {', '.join(OBJECT_KINDS)})")
    return target_kind, target_id


def check_created(status: str, created_kind: str | None, created_id: str | None) -> str | None:
    """The created_kind to store (video unless named); ValueError unless a created object comes with done."""
    if created_id is None:
        if created_kind is not None:
            raise ValueError("a created_kind needs its created_id")
        return None
    if status != OpStatus.DONE:
        raise ValueError(f"an operation that created {created_id} is done, not {status}")
    kind = created_kind or "video"
    if kind not in OBJECT_KINDS:
        raise ValueError(f"unknown created kind {kind!r} (expected one of {', '.join(OBJECT_KINDS)})")
    return kind


def record_outcome(
    conn: sqlite3.Connection,
    now: str,
    op_id: int,
    status: str,
    result: Any,
    *,
    error_code: str | int | None,
    error_message: str | None,
    request_id: str | None,
    run_id: str | None,
    created: tuple[str | None, str | None] = (None, None),
) -> None:
    """intent -> done / failed / void, with the result, error and created (kind, id), journalled."""
    created_kind, created_id = created
    rows = fetch(conn, "SELECT * FROM ops WHERE op_id = ?", (op_id,))
    if not rows:
        raise LedgerError(f"operation {op_id} is not in the ledger")
    row = rows[0]
    check_op_transition(op_id, row["status"], status)
    code = None if error_code is None else str(error_code)
    message = scrub(error_message, ()) if error_message else None
    conn.execute(
        "UPDATE ops SET status = ?, result = ?, error_code = ?, error_message = ?, request_id = ?,"
        " outcome_at = ?, created_kind = ?, created_id = ? WHERE op_id = ?",
        (
            status,
            None if result is None else dump(result),
            code,
            message,
            request_id,
            now,
            created_kind,
            created_id,
            op_id,
        ),
    )
    made = f" (created {created_kind} {created_id})" if created_id else ""
    op_event(
        conn,
        now,
        row,
        from_status=row["status"],
        to_status=status,
        run_id=run_id or row["run_id"],
        error_code=code,
        request_id=request_id,
        message=f"{row['kind']} {status}{made}" + (f": {message}" if message else ""),
    )

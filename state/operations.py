"""Operations: an edit or finish call's intent before it, its outcome right after, journalled with both."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from core.redact import sanitize, scrub
from state.columns import dump
from state.db import fetch
from state.errors import InvalidTransition, LedgerError
from state.journal import op_event
from state.machine import OP_IN_PLACE, OP_INTENT, OP_KINDS, check_op_transition


def record_intent(
    conn: sqlite3.Connection,
    now: str,
    item_key: str | None,
    kind: str,
    params: Mapping[str, Any],
    *,
    run_id: str | None,
    video_id: str | None,
    op_key: str | None,
    before: Mapping[str, Any] | None,
) -> int:
    """Insert an operation in status intent (refused while the same op_key has an unknown outcome)."""
    if op_key is not None:
        open_ops = fetch(conn, "SELECT op_id FROM ops WHERE op_key = ? AND status = ?", (op_key, OP_INTENT))
        if open_ops:
            raise InvalidTransition(
                f"op {op_key}",
                OP_INTENT,
                OP_INTENT,
                f"op {open_ops[0]['op_id']} has an unknown outcome: reconcile it first",
            )
    cursor = conn.execute(
        "INSERT INTO ops (op_key, item_key, video_id, kind, params, before, status, run_id, intent_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            op_key,
            item_key,
            video_id,
            kind,
            dump(sanitize(dict(params))),
            dump(dict(before)) if before else None,
            OP_INTENT,
            run_id,
            now,
        ),
    )
    op_id = int(cursor.lastrowid or 0)
    op_event(
        conn,
        now,
        {"op_id": op_id, "item_key": item_key},
        from_status=None,
        to_status=OP_INTENT,
        run_id=run_id,
        message=f"{kind} intent" + (f" on video {video_id}" if video_id else ""),
    )
    return op_id


def check_intent(kind: str, before: Mapping[str, Any] | None) -> None:
    """Refuse an unknown kind, and an in-place kind without its before snapshot (ValueError)."""
    if kind not in OP_KINDS:
        raise ValueError(f"unknown operation kind {kind!r}")
    if kind in OP_IN_PLACE and not before:
        raise ValueError(f"a {kind} intent needs the video's version/updated_at/duration (before=)")


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
) -> None:
    """intent -> done / failed / void, with the result and error, journalled."""
    rows = fetch(conn, "SELECT * FROM ops WHERE op_id = ?", (op_id,))
    if not rows:
        raise LedgerError(f"operation {op_id} is not in the ledger")
    row = rows[0]
    check_op_transition(op_id, row["status"], status)
    code = None if error_code is None else str(error_code)
    message = scrub(error_message, ()) if error_message else None
    conn.execute(
        "UPDATE ops SET status = ?, result = ?, error_code = ?, error_message = ?, request_id = ?,"
        " outcome_at = ? WHERE op_id = ?",
        (status, None if result is None else dump(result), code, message, request_id, now, op_id),
    )
    op_event(
        conn,
        now,
        row,
        from_status=row["status"],
        to_status=status,
        run_id=run_id or row["run_id"],
        error_code=code,
        request_id=request_id,
        message=f"{row['kind']} {status}" + (f": {message}" if message else ""),
    )

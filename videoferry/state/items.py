"""Item transitions of the create / upload path: intent, outcome, reconcile, video id, offsets, upload end."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from typing import Any

from videoferry.state.columns import SPEC_COLUMNS, meta_pending
from videoferry.state.db import fetch
from videoferry.state.errors import InvalidTransition, LedgerError, UnknownItem
from videoferry.state.journal import Transition, event, write_transitions
from videoferry.state.machine import (
    CREATING,
    FINISHED,
    PLANNED,
    PROCESSING,
    UPLOADED,
    UPLOADING,
    state_for_status,
    status_error_code,
)

#: Columns reset when an item goes back to planned to be created again.
VIDEO_RESET: Mapping[str, Any] = {
    "video_id": None,
    "source_version": None,
    "upload_endpoint": None,
    "upload_offset": 0,
    "bytes_total": None,
    "status": None,
    "created_intent_at": None,
    "create_title": None,
    "create_description": None,
    "failed_from": None,
    "error_code": None,
    "error_message": None,
    "done_at": None,
}
#: The columns meta_pending is computed from (columns.meta_pending; the key never changes).
_OWED_FROM = frozenset({*SPEC_COLUMNS, "create_title", "create_description"})
#: Columns cleared when an item leaves a failure.
CLEAR_ERROR: Mapping[str, Any] = {"error_code": None, "error_message": None, "failed_from": None}


def item_row(conn: sqlite3.Connection, key: str) -> dict[str, Any]:
    """The stored row of an item (UnknownItem when there is none)."""
    rows = fetch(conn, "SELECT * FROM items WHERE key = ?", (key,))
    if not rows:
        raise UnknownItem(key)
    return rows[0]


def transition(
    row: Mapping[str, Any],
    to_state: str,
    run_id: str | None,
    *,
    values: Mapping[str, Any] | None = None,
    allowed_from: Collection[str] | None = None,
    error_code: str | None = None,
    request_id: str | None = None,
    message: str | None = None,
) -> Transition:
    """The move of one item (its current row) to to_state with values and meta_pending, not yet written."""
    key, from_state = row["key"], row["state"]
    if allowed_from is not None and from_state not in allowed_from:
        raise InvalidTransition(key, from_state, to_state, f"this step starts from {', '.join(allowed_from)}")
    changes = dict(values or {})
    if "meta_pending" not in changes:
        if to_state == FINISHED:
            changes["meta_pending"] = 0
        elif _OWED_FROM.isdisjoint(changes):  # nothing it is computed from changes: the stored value holds
            changes["meta_pending"] = row["meta_pending"]
        else:
            changes["meta_pending"] = meta_pending({**row, **changes})
    return Transition(
        key,
        from_state,
        to_state,
        run_id,
        changes,
        error_code=error_code,
        request_id=request_id,
        message=message,
        secrets=(row["upload_endpoint"],),
    )


def move(
    conn: sqlite3.Connection,
    now: str,
    row: Mapping[str, Any],
    to_state: str,
    run_id: str | None,
    **how: Any,
) -> None:
    """Move one item (its current row) to to_state through the journal (see transition() for `how`)."""
    write_transitions(conn, now, [transition(row, to_state, run_id, **how)])


def check_video_free(conn: sqlite3.Connection, key: str, video_id: str) -> None:
    """Refuse a video that already belongs to another item."""
    other = fetch(conn, "SELECT key FROM items WHERE video_id = ? AND key != ?", (video_id, key))
    if other:
        raise LedgerError(f"video {video_id} already belongs to item {other[0]['key']!r}, not {key!r}")


def create_intent(
    row: Mapping[str, Any],
    now: str,
    run_id: str | None,
    create_title: str,
    create_description: str | None,
    source_version: str | None,
) -> Transition:
    """planned -> creating: the create intent (what is sent, when, from which source), before the call."""
    values = {
        "create_title": create_title,
        "create_description": create_description,
        "created_intent_at": now,
        "source_version": source_version,
        "attempts": (row["attempts"] or 0) + 1,
        **CLEAR_ERROR,
    }
    return transition(row, CREATING, run_id, allowed_from={PLANNED}, values=values, message="create intent")


def begin_create(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    create_title: str,
    create_description: str | None,
    source_version: str | None,
) -> None:
    """planned -> creating: the create intent, committed before the call."""
    row = item_row(conn, key)
    intent = create_intent(row, now, run_id, create_title, create_description, source_version)
    write_transitions(conn, now, [intent])


def upload_started(
    row: Mapping[str, Any],
    run_id: str | None,
    video_id: str | None,
    endpoint: str,
    bytes_total: int,
    request_id: str | None,
) -> Transition:
    """creating -> uploading: video id (maybe unknown yet), endpoint and size saved with the state."""
    values = {
        "video_id": video_id,
        "upload_endpoint": endpoint,
        "upload_offset": 0,
        "bytes_total": bytes_total,
        "status": "pending",
        "request_id": request_id,
    }
    return transition(
        row,
        UPLOADING,
        run_id,
        allowed_from={CREATING},
        values=values,
        request_id=request_id,
        message=f"upload session created for video {video_id or '(its id learned later)'}",
    )


def create_started_upload(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    video_id: str | None,
    endpoint: str,
    bytes_total: int,
    request_id: str | None,
) -> None:
    """creating -> uploading (upload_started), the video checked free of any other item first."""
    row = item_row(conn, key)
    if video_id is not None:
        check_video_free(conn, key, video_id)
    write_transitions(conn, now, [upload_started(row, run_id, video_id, endpoint, bytes_total, request_id)])


def create_accepted(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    video_id: str,
    request_id: str | None,
    status: str | None,
) -> None:
    """creating -> processing: a single-request or URL upload accepted, with its video id."""
    row = item_row(conn, key)
    check_video_free(conn, key, video_id)
    values: dict[str, Any] = {"video_id": video_id, "status": status or "pending", "request_id": request_id}
    if row["via"] == "single" and row["source_size"] is not None:
        values.update(bytes_total=row["source_size"], upload_offset=row["source_size"])
    move(
        conn,
        now,
        row,
        PROCESSING,
        run_id,
        allowed_from={CREATING},
        values=values,
        request_id=request_id,
        message=f"upload accepted: video {video_id}",
    )


def adopt(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    video_id: str,
    status: str,
    request_id: str | None,
) -> str:
    """creating -> the state the found video's status implies; returns that state."""
    row = item_row(conn, key)
    check_video_free(conn, key, video_id)
    target = state_for_status(status, CREATING, row["via"])
    values: dict[str, Any] = {"video_id": video_id, "status": status, "request_id": request_id}
    if row["source_size"] is not None:
        values["bytes_total"] = row["source_size"]
    error_code = status_error_code(target)
    if error_code is not None:
        values.update(
            error_code=error_code,
            error_message=f"the adopted video {video_id} was already in status {status}",
        )
    move(
        conn,
        now,
        row,
        target,
        run_id,
        allowed_from={CREATING},
        values=values,
        error_code=error_code,
        request_id=request_id,
        message=f"reconcile: adopted existing video {video_id} (status {status})",
    )
    return target


def reconcile_none(
    conn: sqlite3.Connection, now: str, key: str, run_id: str | None, message: str | None
) -> None:
    """creating -> planned: no video matched, safe to create again."""
    move(
        conn,
        now,
        item_row(conn, key),
        PLANNED,
        run_id,
        allowed_from={CREATING},
        values={"created_intent_at": None},
        message="reconcile: no matching video; safe to create again" + (f" ({message})" if message else ""),
    )


def set_video_id(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    video_id: str,
    how: str = "found by listing",
) -> None:
    """Record the video of an item whose create answer was recorded without it (`how` it was learned)."""
    row = item_row(conn, key)
    if row["video_id"] == video_id:
        return
    if row["video_id"] is not None:
        raise LedgerError(f"item {key!r} already has video {row['video_id']}, not {video_id}")
    check_video_free(conn, key, video_id)
    conn.execute("UPDATE items SET video_id = ?, updated_at = ? WHERE key = ?", (video_id, now, key))
    event(
        conn,
        now,
        kind="note",
        run_id=run_id,
        key=key,
        from_state=row["state"],
        to_state=row["state"],
        message=f"video {video_id} {how}",
    )


def new_upload_address(
    conn: sqlite3.Connection, now: str, key: str, run_id: str | None, endpoint: str, bytes_total: int
) -> None:
    """uploading -> uploading with a new upload session's endpoint (secret, never in the event), offset 0."""
    row = item_row(conn, key)
    if row["state"] != UPLOADING:
        raise InvalidTransition(
            key, row["state"], UPLOADING, "an upload address is given only while uploading"
        )
    conn.execute(
        "UPDATE items SET upload_endpoint = ?, upload_offset = 0, bytes_total = ?, updated_at = ?"
        " WHERE key = ?",
        (endpoint, bytes_total, now, key),
    )
    message = f"new upload session (type replace) for video {row['video_id']}"
    event(
        conn,
        now,
        kind="note",
        run_id=run_id,
        key=key,
        from_state=UPLOADING,
        to_state=UPLOADING,
        message=message,
    )


def record_offset(conn: sqlite3.Connection, now: str, key: str, offset: int, allow_decrease: bool) -> int:
    """uploading -> uploading with a new offset (no event; never lowered unless allow_decrease)."""
    if offset < 0:
        raise ValueError("an upload offset cannot be negative")
    row = item_row(conn, key)
    if row["state"] != UPLOADING:
        raise InvalidTransition(key, row["state"], UPLOADING, "offsets are recorded only while uploading")
    if row["bytes_total"] is not None and offset > row["bytes_total"]:
        raise ValueError(f"offset {offset} is beyond the upload size {row['bytes_total']}")
    new = offset if allow_decrease else max(offset, row["upload_offset"] or 0)
    if new != row["upload_offset"]:
        progress = {"upload_offset": new, "meta_pending": row["meta_pending"]}  # nothing else changes
        write_transitions(conn, now, [Transition(key, UPLOADING, UPLOADING, None, progress, journal=False)])
    return int(new)


def upload_end(row: Mapping[str, Any], run_id: str | None, request_id: str | None) -> Transition:
    """uploading -> uploaded: every byte acknowledged; the endpoint is forgotten."""
    total = row["bytes_total"] if row["bytes_total"] is not None else row["upload_offset"]
    return transition(
        row,
        UPLOADED,
        run_id,
        allowed_from={UPLOADING},
        values={"upload_offset": total, "bytes_total": total},
        request_id=request_id,
        message="upload complete",
    )


def upload_complete(
    conn: sqlite3.Connection, now: str, key: str, run_id: str | None, request_id: str | None
) -> None:
    """uploading -> uploaded (upload_end)."""
    write_transitions(conn, now, [upload_end(item_row(conn, key), run_id, request_id)])

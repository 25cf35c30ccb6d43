"""Item transitions after the upload: service statuses, failures, finishing, restart, requeue, and notes."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from typing import Any

from videoferry.core.redact import scrub
from videoferry.state.db import fetch
from videoferry.state.items import CLEAR_ERROR, VIDEO_RESET, item_row, move, transition
from videoferry.state.journal import Transition, event, write_transitions
from videoferry.state.machine import (
    ABORTED,
    COMPLETE_STATES,
    DONE,
    ERROR,
    FAILED,
    FINISHED,
    HELD_BY_ADOPT,
    PLANNED,
    PROCESSING,
    UPLOADED,
    UPLOADING,
    WATCHED_STATES,
    state_for_status,
    status_error_code,
)

# States in which the service's status of the item's video may be recorded.
_STATUS_FROM = WATCHED_STATES | COMPLETE_STATES | {ERROR, ABORTED}
_CHUNK = 900  # bound parameters per IN (...) list


def status_change(
    row: Mapping[str, Any], run_id: str | None, status: str, message: str | None
) -> Transition | None:
    """The move the service's status of the item's video implies; None when it changes nothing."""
    current = row["state"]
    target = state_for_status(status, current, row["via"])
    if target == current and (status == row["status"] or current in COMPLETE_STATES):
        return None
    values: dict[str, Any] = {"status": status}
    error_code = status_error_code(target)
    if error_code is not None:
        values.update(error_code=error_code, error_message=message)
    return transition(
        row,
        target,
        run_id,
        values=values,
        allowed_from=_STATUS_FROM,
        error_code=error_code,
        message=f"status {status}" + (f": {message}" if message else ""),
    )


def record_status(
    conn: sqlite3.Connection,
    now: str,
    row: Mapping[str, Any],
    run_id: str | None,
    status: str,
    message: str | None,
) -> str:
    """Record the service's status of the item's video, moving the item as it implies; returns the state."""
    change = status_change(row, run_id, status, message)
    if change is None:
        return str(row["state"])
    write_transitions(conn, now, [change])
    return change.to_state


def apply_statuses(
    conn: sqlite3.Connection,
    now: str,
    run_id: str | None,
    statuses: Mapping[str, str],
    messages: Mapping[str, str] | None,
) -> list[tuple[str, str, str]]:
    """status_change() for the watched items of a listing page {video_id: status}, written as one batch;
    (key, from, to) of every item whose state changed."""
    changes: list[Transition] = []
    ids = list(statuses)
    watched = ", ".join(f"'{s}'" for s in sorted(WATCHED_STATES))
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ", ".join("?" * len(chunk))
        # `+state`: the state is checked on the rows found, not searched. Given ten ids or more, SQLite
        # searched the items_state index instead of items_video_id (it has no statistics to tell them apart)
        # and read every watched item per chunk: O(watched) a call, O(run^2) over the poll that ends a run.
        sql = f"SELECT * FROM items WHERE video_id IN ({marks}) AND +state IN ({watched})"
        for row in fetch(conn, sql, chunk):
            video_id = row["video_id"]
            change = status_change(row, run_id, statuses[video_id], (messages or {}).get(video_id))
            if change is not None:
                changes.append(change)
    write_transitions(conn, now, changes)
    return [(c.key, str(c.from_state), c.to_state) for c in changes if c.to_state != c.from_state]


def fail(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    run_id: str | None,
    error_code: str | int,
    message: str,
    request_id: str | None,
) -> None:
    """-> failed, remembering where (requeue resumes there); an empty message names the code."""
    row = item_row(conn, key)
    code = str(error_code)
    message = message.strip() or f"failed with code {code} (no further detail was given)"
    values = {
        "failed_from": row["state"],
        "error_code": code,
        "error_message": message,
        "request_id": request_id,
    }
    move(
        conn,
        now,
        row,
        FAILED,
        run_id,
        values=values,
        error_code=code,
        request_id=request_id,
        message=message,
    )


def finish(row: Mapping[str, Any], run_id: str | None) -> Transition:
    """done -> finished: nothing is owed any more."""
    return transition(
        row, FINISHED, run_id, allowed_from={DONE}, values={"meta_pending": 0}, message="finished"
    )


def finished(conn: sqlite3.Connection, now: str, key: str, run_id: str | None) -> None:
    """done -> finished (finish)."""
    write_transitions(conn, now, [finish(item_row(conn, key), run_id)])


def restarted(row: Mapping[str, Any], run_id: str | None, message: str) -> Transition:
    """-> planned with the video forgotten (its id stays in the journal), to create it again."""
    note = f"restart: {message}"
    if row["video_id"]:
        note += f" (previous video {row['video_id']})"
    return transition(
        row,
        PLANNED,
        run_id,
        allowed_from={UPLOADING, UPLOADED, PROCESSING, FAILED, ERROR, ABORTED},
        values=dict(VIDEO_RESET),
        message=note,
    )


def restart(
    conn: sqlite3.Connection, now: str, row: Mapping[str, Any], run_id: str | None, message: str
) -> None:
    """-> planned with the video forgotten (restarted)."""
    write_transitions(conn, now, [restarted(row, run_id, message)])


def requeue_failed(
    conn: sqlite3.Connection,
    now: str,
    run_id: str | None,
    keys: Collection[str] | None,
    include_service_errors: bool,
) -> dict[str, int]:
    """Failed items back to where they can resume (error / aborted restarted on request), written as one
    batch; {target: count}. Items held by check --adopt are requeued only when named in keys."""
    states = [FAILED, *([ERROR, ABORTED] if include_service_errors else [])]
    targets: dict[str, int] = {}
    marks = ", ".join("?" * len(states))
    rows = fetch(conn, f"SELECT * FROM items WHERE state IN ({marks}) ORDER BY key", states)
    wanted = set(keys) if keys is not None else None
    moves: list[Transition] = []
    for row in rows:
        if wanted is not None and row["key"] not in wanted:
            continue
        if wanted is None and row["error_code"] == HELD_BY_ADOPT:
            continue  # held by check --adopt: requeued only by key, when the user asks for it
        if row["state"] in (ERROR, ABORTED):
            moves.append(restarted(row, run_id, f"requeued after the service reported {row['state']}"))
        elif row["video_id"] is None:
            moves.append(
                transition(row, PLANNED, run_id, values=dict(VIDEO_RESET), message="requeued: no video yet")
            )
        else:
            origin = row["failed_from"]
            target = origin if origin in (UPLOADING, UPLOADED, PROCESSING, DONE) else PROCESSING
            values = {**CLEAR_ERROR, "attempts": (row["attempts"] or 0) + 1}
            moves.append(
                transition(row, target, run_id, values=values, message=f"requeued: resume at {target}")
            )
        targets[moves[-1].to_state] = targets.get(moves[-1].to_state, 0) + 1
    write_transitions(conn, now, moves)
    return targets


def note(
    conn: sqlite3.Connection,
    now: str,
    key: str | None,
    run_id: str | None,
    message: str,
    kind: str,
    error_code: str | int | None,
    request_id: str | None,
) -> None:
    """Journal a note / retry about an item (or the run), its endpoint blanked out of the message."""
    state = secret = None
    if key is not None:
        rows = fetch(conn, "SELECT state, upload_endpoint FROM items WHERE key = ?", (key,))
        state = rows[0]["state"] if rows else None
        secret = rows[0]["upload_endpoint"] if rows else None
    event(
        conn,
        now,
        kind=kind,
        run_id=run_id,
        key=key,
        from_state=state,
        to_state=state,
        error_code=None if error_code is None else str(error_code),
        request_id=request_id,
        message=scrub(message, (secret,)),
    )

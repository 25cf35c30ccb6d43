"""Apply units: one operation of an operations file on one video, its state and result, journalled."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from videoferry.core.redact import scrub
from videoferry.state.db import fetch
from videoferry.state.errors import LedgerError
from videoferry.state.journal import event
from videoferry.state.machine import UnitState, check_unit_transition
from videoferry.state.models import parse_time

#: How owners() names a unit that created a video (a migrated item is named by its bare key).
UNIT_OWNER = "unit:"


@dataclass(frozen=True)
class UnitPlan:
    """What planning stores for a unit: which operation, on which video (None: known when `depends` ran)."""

    unit_key: str
    op_id: str
    row: int | None
    kind: str
    target: str
    video_id: str | None
    depends: tuple[str, ...]
    params: str  # the parameters in short, secret-free (what status and reports show)


@dataclass(frozen=True)
class Unit:
    """One unit as the ledger holds it."""

    unit_key: str
    op_id: str
    row: int | None
    kind: str
    target: str
    video_id: str | None
    depends: tuple[str, ...]
    params: str
    state: str
    result_id: str | None
    detail: str | None
    error_code: str | None
    error_message: str | None
    attempts: int
    last_run: str | None
    updated_at: datetime | None
    done_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Unit:
        """Build from a units row."""
        return cls(
            unit_key=row["unit_key"],
            op_id=row["op_id"],
            row=row["row"],
            kind=row["kind"],
            target=row["target"],
            video_id=row["video_id"],
            depends=tuple(json.loads(row["depends"] or "[]")),
            params=row["params"],
            state=row["state"],
            result_id=row["result_id"],
            detail=row["detail"],
            error_code=row["error_code"],
            error_message=row["error_message"],
            attempts=row["attempts"],
            last_run=row["last_run"],
            updated_at=parse_time(row["updated_at"]),
            done_at=parse_time(row["done_at"]),
        )

    def report_row(self) -> dict[str, Any]:
        """The unit as a report row (secret-free: params are the short description)."""
        return {
            "unit": self.unit_key,
            "op_id": self.op_id,
            "row": self.row,
            "kind": self.kind,
            "target": self.target,
            "video_id": self.video_id,
            "state": self.state,
            "result_id": self.result_id,
            "params": self.params,
            "detail": self.detail,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "attempts": self.attempts,
            "done_at": self.done_at.isoformat() if self.done_at else None,
        }


def plan_units(conn: sqlite3.Connection, now: str, plans: Iterable[UnitPlan], run_id: str | None) -> int:
    """Insert the units not yet in the ledger (a known unit keeps its state); returns how many are new."""
    added = 0
    for p in plans:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO units (unit_key, op_id, row, kind, target, video_id, depends, params,"
            " state, first_run, last_run, planned_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.unit_key,
                p.op_id,
                p.row,
                p.kind,
                p.target,
                p.video_id,
                json.dumps(list(p.depends)),
                p.params,
                UnitState.PLANNED,
                run_id,
                run_id,
                now,
                now,
            ),
        )
        if cursor.rowcount:
            added += 1
            event(
                conn,
                now,
                kind="unit",
                run_id=run_id,
                key=p.unit_key,
                to_state=UnitState.PLANNED,
                message=f"{p.kind} planned on {p.video_id or p.target}",
            )
    return added


def move_unit(
    conn: sqlite3.Connection,
    now: str,
    key: str,
    to_state: str,
    run_id: str | None,
    *,
    message: str,
    values: Mapping[str, Any] | None = None,
    error_code: str | int | None = None,
    request_id: str | None = None,
    expect: Sequence[str] = (),
) -> str:
    """THE writer of a unit's state: check the transition, write the row and its journal event together.

    expect: the states the caller believes the unit is in (another state raises InvalidTransition via the
    machine unless the move is allowed from there). Returns the state it left.
    """
    rows = fetch(conn, "SELECT state FROM units WHERE unit_key = ?", (key,))
    if not rows:
        raise LedgerError(f"unit {key!r} is not in the ledger")
    from_state = rows[0]["state"]
    if expect and from_state not in expect:
        raise LedgerError(f"unit {key!r} is {from_state}, not {' or '.join(expect)}")
    check_unit_transition(key, from_state, to_state)
    changes: dict[str, Any] = {"state": to_state, "updated_at": now, "last_run": run_id, **(values or {})}
    if to_state == UnitState.DONE:
        changes["done_at"] = now
    if error_code is not None:
        changes["error_code"] = str(error_code)
    if changes.get("error_message"):
        changes["error_message"] = scrub(changes["error_message"], ())
    if to_state != "failed" and "error_code" not in changes:
        changes.update(error_code=None, error_message=None)
    columns = ", ".join(f"{c} = ?" for c in changes)
    conn.execute(f"UPDATE units SET {columns} WHERE unit_key = ?", (*changes.values(), key))
    event(
        conn,
        now,
        kind="unit",
        run_id=run_id,
        key=key,
        from_state=from_state,
        to_state=to_state,
        error_code=None if error_code is None else str(error_code),
        request_id=request_id,
        message=scrub(message, ()),
    )
    return str(from_state)


def unit_state(conn: sqlite3.Connection, key: str) -> str:
    """The state of one unit (LedgerError when it is not in the ledger)."""
    rows = fetch(conn, "SELECT state FROM units WHERE unit_key = ?", (key,))
    if not rows:
        raise LedgerError(f"unit {key!r} is not in the ledger")
    return str(rows[0]["state"])


def bump_attempts(conn: sqlite3.Connection, key: str, video_id: str | None) -> None:
    """Count one more call of a unit (an intent written); an op: target's video is known from now on."""
    conn.execute(
        "UPDATE units SET attempts = attempts + 1, video_id = COALESCE(video_id, ?) WHERE unit_key = ?",
        (video_id, key),
    )


def units(
    conn: sqlite3.Connection, states: Iterable[str] | None = None, *, key: str | None = None
) -> list[Unit]:
    """Units in the given states (all when None; only `key` when given), in plan order."""
    where: list[str] = []
    args: list[Any] = []
    if states is not None:
        wanted = list(states)
        where.append(f"state IN ({', '.join('?' * len(wanted))})")
        args += wanted
    if key is not None:
        where.append("unit_key = ?")
        args.append(key)
    sql = "SELECT * FROM units" + (f" WHERE {' AND '.join(where)}" if where else "")
    sql += " ORDER BY planned_at, row, unit_key"
    return [Unit.from_row(r) for r in fetch(conn, sql, args)]


def last_event(conn: sqlite3.Connection) -> int:
    """The journal's newest event id (0 when empty): where units_changed_since starts counting."""
    rows = fetch(conn, "SELECT COALESCE(MAX(event_id), 0) AS last FROM events")
    return int(rows[0]["last"])


def units_changed_since(conn: sqlite3.Connection, after: int) -> tuple[list[Unit], int]:
    """The units planned or moved (move_unit journals every move) by events after event id `after`, as they
    are now, and the newest event id seen: a caller that keeps the units reads only what changed, not the
    whole table. Event ids grow in commit order (one writer at a time), so no change falls between two calls.
    """
    events = fetch(
        conn,
        "SELECT event_id, key FROM events WHERE event_id > ? AND kind = 'unit' ORDER BY event_id",
        (after,),
    )
    last = max([after, *(int(r["event_id"]) for r in events)])
    keys = list(dict.fromkeys(str(r["key"]) for r in events))
    found: list[Unit] = []
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT * FROM units WHERE unit_key IN ({marks}) ORDER BY planned_at, row, unit_key"
        found += [Unit.from_row(r) for r in fetch(conn, sql, chunk)]
    return found, last


def owners(conn: sqlite3.Connection, video_ids: Sequence[str]) -> dict[str, str]:
    """Which ledger entry owns each video: an item's key, or the unit whose operation created it (created_kind
    video)."""
    found: dict[str, str] = {}
    for start in range(0, len(video_ids), 500):
        chunk = list(video_ids[start : start + 500])
        marks = ", ".join("?" * len(chunk))
        for r in fetch(conn, f"SELECT key, video_id FROM items WHERE video_id IN ({marks})", chunk):
            found[r["video_id"]] = r["key"]
        # Through the ops_created index (created_kind, created_id): by created_id alone, SQLite scanned every
        # operation per 500 videos (a check of a large library against a ledger of many operations).
        sql = (
            "SELECT op_key, created_id FROM ops"
            f" WHERE created_kind = 'video' AND created_id IN ({marks}) AND op_key IS NOT NULL"
        )
        for r in fetch(conn, sql, chunk):
            found.setdefault(r["created_id"], UNIT_OWNER + r["op_key"])
    return found

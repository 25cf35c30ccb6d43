"""The journal: the one writer of item transitions (row and event in one transaction) and of every event."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any

from videoferry.core.redact import MAX_MESSAGE, scrub
from videoferry.state.columns import SPEC_VALUE_NAMES
from videoferry.state.machine import DONE, FAILED, FINISHED, PLANNED, UPLOADING, check_transition
from videoferry.state.schema import VIA_CHECK, VIAS

#: What replaces a known upload endpoint in stored messages.
ENDPOINT_PLACEHOLDER = "<upload endpoint>"
# After these states the upload endpoint is no longer needed and is forgotten (it is a capability).
_KEEPS_ENDPOINT = frozenset({UPLOADING, FAILED})
_EVENT_COLUMNS = (
    "time",
    "run_id",
    "kind",
    "key",
    "op_id",
    "from_state",
    "to_state",
    "error_code",
    "request_id",
    "message",
)
_INSERT_EVENT = (
    f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES ({', '.join('?' * len(_EVENT_COLUMNS))})"
)
_MAX_PARAMS = 900  # bound parameters per statement (under SQLite's old default limit of 999)


def insert_rows(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """INSERT rows in statements of many VALUES tuples each: one statement per chunk, not one per row (a
    statement's CHECK lists and the events AUTOINCREMENT are then set up once per chunk)."""
    _insert_shared(conn, table, {}, columns, rows)


def _insert_shared(
    conn: sqlite3.Connection,
    table: str,
    shared: Mapping[str, Any],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """insert_rows for rows that also share the values of ``shared``: those are bound once per statement
    (numbered parameters ?1..?k, repeated in every VALUES tuple), each row binds only its own columns."""
    names = ", ".join(f'"{c}"' for c in (*shared, *columns))
    k, width = len(shared), len(columns)
    per = max(1, (_MAX_PARAMS - k) // width)
    values = tuple(shared.values())
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        sql = f"INSERT INTO {table} ({names}) VALUES {_numbered_values(k, width, len(chunk))}"
        conn.execute(sql, [*values, *chain.from_iterable(chunk)])


@lru_cache(maxsize=64)
def _numbered_values(shared: int, width: int, rows: int) -> str:
    """'(?1, .., ?k, ?k+1, ..), (?1, .., ?k, ..)': rows tuples of the shared parameters, then their own."""
    head = [f"?{i}" for i in range(1, shared + 1)]
    tuples = []
    for r in range(rows):
        first = shared + r * width + 1
        tuples.append(f"({', '.join([*head, *(f'?{i}' for i in range(first, first + width))])})")
    return ", ".join(tuples)


@dataclass(frozen=True)
class Transition:
    """One item state change: the columns written with it and what its journal row says.

    from_state None inserts a new item (only into planned). secrets are strings blanked out of the message and
    error_message (the item's stored endpoint; a new endpoint in values is added). journal False writes the
    row without an event: only for progress inside a state (an upload offset).
    """

    key: str
    from_state: str | None
    to_state: str
    run_id: str | None
    values: Mapping[str, Any] = field(default_factory=dict)
    error_code: str | None = None
    request_id: str | None = None
    message: str | None = None
    secrets: tuple[str | None, ...] = ()
    journal: bool = True


def _columns(t: Transition, now: str) -> dict[str, Any]:
    """The item columns a transition writes: its state, the stamps it implies, then its values."""
    changes: dict[str, Any] = {"state": t.to_state, "updated_at": now}
    if t.run_id is not None:
        changes["last_run"] = t.run_id
    if t.to_state == DONE and t.from_state != DONE:
        changes["done_at"] = now
    if t.to_state == FINISHED:
        changes["finished_at"] = now
    if t.to_state not in _KEEPS_ENDPOINT:
        changes["upload_endpoint"] = None
    changes.update(t.values)
    if changes.get("error_message"):
        changes["error_message"] = scrub(changes["error_message"], _secrets(t), ENDPOINT_PLACEHOLDER)
    return changes


def _secrets(t: Transition) -> tuple[str | None, ...]:
    return (*t.secrets, t.values.get("upload_endpoint"))


def write_transitions(conn: sqlite3.Connection, now: str, transitions: Iterable[Transition]) -> None:
    """THE writer of item state: check each change, write its row and its event (inside the caller's
    transaction, so both commit or neither does). A batch is written in few statements: new items and events
    in multi-row INSERTs, runs of updates that set the same columns in one executemany (in their order)."""
    inserts: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    events: list[tuple[Any, ...]] = []
    updates: list[tuple[Any, ...]] = []
    update_columns: tuple[str, ...] = ()
    for t in transitions:
        check_transition(t.key, t.from_state, t.to_state)
        changes = _columns(t, now)
        if t.from_state is None:
            row = {"key": t.key, **changes}
            inserts.setdefault(tuple(row), []).append(tuple(row.values()))
        else:
            columns = tuple(changes)
            if columns != update_columns:
                _update(conn, update_columns, updates)
                update_columns, updates = columns, []
            updates.append((*changes.values(), t.key))
        if t.journal:
            message = scrub(t.message, _secrets(t), ENDPOINT_PLACEHOLDER) if t.message else None
            events.append(
                (now, t.run_id, "transition", t.key, None, t.from_state, t.to_state, t.error_code)
                + (t.request_id, message)
            )
    _update(conn, update_columns, updates)
    for names, rows in inserts.items():
        insert_rows(conn, "items", names, rows)
    if events:
        insert_rows(conn, "events", _EVENT_COLUMNS, events)


#: The columns of a new item's row as write_births takes them: its spec as stored, then meta_pending.
BIRTH_COLUMNS: tuple[str, ...] = (*SPEC_VALUE_NAMES, "meta_pending")
_VIA_AT = BIRTH_COLUMNS.index("via")
_VIAS: frozenset[str | None] = frozenset({None, *VIAS})  # the items CHECK: via IS NULL OR via IN VIAS


def write_births(
    conn: sqlite3.Connection,
    now: str,
    run_id: str | None,
    rows: Sequence[Sequence[Any]],
    messages: Sequence[str | None],
) -> None:
    """New items (None -> planned) and their journal rows, as write_transitions writes a Transition(key, None,
    PLANNED, run_id, values, message=...) for each, with values every BIRTH_COLUMNS but key plus
    first_seen_run = last_run = run_id: the same rows, written with fewer bound values (a plan's many new
    items). rows are BIRTH_COLUMNS values; messages, one per row, say where each came from."""
    if not rows:
        return
    check_transition(rows[0][0], None, PLANNED)  # the same change for each: allowed for one, for all
    stamps = {"state": PLANNED, "updated_at": now, "last_run": run_id, "first_seen_run": run_id}
    # The items CHECK constraints (schema.py: state and via) are checked here, once for all the rows: state is
    # PLANNED, a known state (check_transition); every via is one the schema lists. SQLite then skips them
    # (ignore_check_constraints, this connection, these statements only): for every row of a big plan they
    # were a sixth of its inserts. NOT NULL and UNIQUE are still SQLite's.
    bad = {row[_VIA_AT] for row in rows} - _VIAS
    if bad:
        raise sqlite3.IntegrityError(f"CHECK constraint failed: {VIA_CHECK}")  # as SQLite words it
    conn.execute("PRAGMA ignore_check_constraints = ON")
    try:
        _insert_shared(conn, "items", stamps, BIRTH_COLUMNS, rows)
    finally:
        conn.execute("PRAGMA ignore_check_constraints = OFF")
    shared = {"time": now, "run_id": run_id, "kind": "transition", "to_state": PLANNED}
    # Each message as write_transitions stores it (scrub() with no secret: a birth carries none; only a
    # message over MAX_MESSAGE changes, so the call is made for those alone).
    journal = [
        (row[0], (message if len(message) <= MAX_MESSAGE else scrub(message, ())) if message else None)
        for row, message in zip(rows, messages, strict=True)
    ]
    _insert_shared(conn, "events", shared, ("key", "message"), journal)


def _update(conn: sqlite3.Connection, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    """UPDATE items by key: rows are the values of columns, then the key."""
    if rows:
        assignments = ", ".join(f'"{c}" = ?' for c in columns)
        conn.executemany(f"UPDATE items SET {assignments} WHERE key = ?", rows)


def event(
    conn: sqlite3.Connection,
    time: str,
    *,
    kind: str,
    run_id: str | None,
    key: str | None = None,
    from_state: str | None = None,
    to_state: str | None = None,
    op_id: int | None = None,
    error_code: str | None = None,
    request_id: str | None = None,
    message: str | None = None,
) -> None:
    """Append one event that is not an item transition (run, plan, note, retry, op)."""
    conn.execute(
        _INSERT_EVENT,
        (time, run_id, kind, key, op_id, from_state, to_state, error_code, request_id, message),
    )


def op_event(
    conn: sqlite3.Connection,
    time: str,
    op: Mapping[str, Any],
    *,
    from_status: str | None,
    to_status: str,
    run_id: str | None,
    message: str,
    error_code: str | None = None,
    request_id: str | None = None,
) -> None:
    """Append an operation's status change (kind 'op'), keyed by its item and op_id."""
    event(
        conn,
        time,
        kind="op",
        run_id=run_id,
        key=op["item_key"],
        op_id=op["op_id"],
        from_state=from_status,
        to_state=to_status,
        error_code=error_code,
        request_id=request_id,
        message=message,
    )

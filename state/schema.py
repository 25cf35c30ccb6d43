"""Ledger schema: DDL, version stamp, and the checks that tell a videoferry ledger from any other file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping

from state.machine import STATES, OpStatus, UnitState

SCHEMA_VERSION = 5
# PRAGMA application_id stamped into the file header: b"vfry".
APPLICATION_ID = 0x76667279
TABLES: tuple[str, ...] = ("meta", "runs", "items", "ops", "events", "units")

_STATE_LIST = ", ".join(f"'{s}'" for s in STATES)
#: The via values items may hold (besides NULL: an older ledger's row), as the items CHECK lists them.
VIAS: tuple[str, ...] = ("tus", "url", "single")
VIA_CHECK = f"via IS NULL OR via IN ({', '.join(repr(v) for v in VIAS)})"
_OP_STATUS_LIST = ", ".join(f"'{s}'" for s in tuple(OpStatus))

# Looking operations up by what they act on and by what they created (reconcile of creating operations).
OPS_TARGET_INDEXES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS ops_target ON ops (target_kind, target_id)",
    "CREATE INDEX IF NOT EXISTS ops_created ON ops (created_kind, created_id)",
)

_UNIT_STATE_LIST = ", ".join(f"'{s}'" for s in tuple(UnitState))

# The units of `videoferry apply` (schema 4; state/applied.py): its calls are ops rows with op_key = unit_key.
UNITS_DDL: tuple[str, ...] = (
    f"""
    CREATE TABLE IF NOT EXISTS units (
        unit_key TEXT PRIMARY KEY,
        op_id TEXT NOT NULL,
        row INTEGER,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        video_id TEXT,
        depends TEXT NOT NULL DEFAULT '[]',
        params TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL CHECK (state IN ({_UNIT_STATE_LIST})),
        result_id TEXT,
        detail TEXT,
        error_code TEXT,
        error_message TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        first_run TEXT,
        last_run TEXT,
        planned_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        done_at TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS units_state ON units (state)",
    "CREATE INDEX IF NOT EXISTS units_op_id ON units (op_id)",
)


#: The secondary indexes of items and of events (by name; not their keys). A plan into a new ledger builds
#: them once its rows are in (state/planning.py), inside its transaction.
ITEMS_INDEXES: Mapping[str, str] = {
    "items_state": "CREATE INDEX IF NOT EXISTS items_state ON items (state)",
    "items_row": "CREATE INDEX IF NOT EXISTS items_row ON items (row)",
    # One video belongs to at most one item: the last guard against adopting a video twice.
    "items_video_id": (
        "CREATE UNIQUE INDEX IF NOT EXISTS items_video_id ON items (video_id) WHERE video_id IS NOT NULL"
    ),
}
EVENTS_INDEXES: Mapping[str, str] = {
    "events_key": "CREATE INDEX IF NOT EXISTS events_key ON events (key)",
    "events_run_id": "CREATE INDEX IF NOT EXISTS events_run_id ON events (run_id)",
}


# Times are RFC 3339 UTC text with microseconds ("...T12:00:00.000000Z"): they sort as text.
DDL: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        command TEXT NOT NULL,
        params TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL,
        pid INTEGER,
        host TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        summary TEXT
    )
    """,
    f"""
    CREATE TABLE IF NOT EXISTS items (
        key TEXT PRIMARY KEY,
        row INTEGER,
        source TEXT NOT NULL,
        source_size INTEGER,
        source_version TEXT,
        title TEXT,
        description TEXT,
        parent_id TEXT,
        tags TEXT,
        chapters TEXT,
        privacy_type TEXT,
        privacy_domains TEXT,
        attachments TEXT,
        via TEXT CHECK ({VIA_CHECK}),
        create_title TEXT,
        create_description TEXT,
        state TEXT NOT NULL CHECK (state IN ({_STATE_LIST})),
        failed_from TEXT,
        video_id TEXT,
        upload_endpoint TEXT,
        upload_offset INTEGER NOT NULL DEFAULT 0,
        bytes_total INTEGER,
        status TEXT,
        error_code TEXT,
        error_message TEXT,
        request_id TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_intent_at TEXT,
        first_seen_run TEXT,
        last_run TEXT,
        updated_at TEXT,
        done_at TEXT,
        finished_at TEXT,
        meta_pending INTEGER NOT NULL DEFAULT 0
    )
    """,
    *ITEMS_INDEXES.values(),
    # ops.item_key holds the op's owner (models.Op.owner_key): an item's key, backup:<dest>[:<video>] or
    # archive:<video>. The column keeps its first name, so every ledger written before opens as it is.
    f"""
    CREATE TABLE IF NOT EXISTS ops (
        op_id INTEGER PRIMARY KEY AUTOINCREMENT,
        op_key TEXT,
        item_key TEXT,
        video_id TEXT,
        target_kind TEXT,
        target_id TEXT,
        kind TEXT NOT NULL,
        params TEXT NOT NULL DEFAULT '{{}}',
        before TEXT,
        status TEXT NOT NULL CHECK (status IN ({_OP_STATUS_LIST})),
        result TEXT,
        error_code TEXT,
        error_message TEXT,
        request_id TEXT,
        created_kind TEXT,
        created_id TEXT,
        run_id TEXT,
        intent_at TEXT NOT NULL,
        outcome_at TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS ops_item_key ON ops (item_key)",
    "CREATE INDEX IF NOT EXISTS ops_op_key ON ops (op_key)",
    "CREATE INDEX IF NOT EXISTS ops_status ON ops (status)",
    *OPS_TARGET_INDEXES,
    """
    CREATE TABLE IF NOT EXISTS events (
        event_id INTEGER PRIMARY KEY AUTOINCREMENT,
        time TEXT NOT NULL,
        run_id TEXT,
        kind TEXT NOT NULL,
        key TEXT,
        op_id INTEGER,
        from_state TEXT,
        to_state TEXT,
        error_code TEXT,
        request_id TEXT,
        message TEXT
    )
    """,
    *EVENTS_INDEXES.values(),
    # The journal is append-only.
    """
    CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'events is an append-only journal'); END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'events is an append-only journal'); END
    """,
    *UNITS_DDL,
)


def _add_source_version(conn: sqlite3.Connection) -> None:
    """1 -> 2: items.source_version (size plus mtime or ETag of the source when its create was sent)."""
    conn.execute("ALTER TABLE items ADD COLUMN source_version TEXT")


def _add_op_targets(conn: sqlite3.Connection) -> None:
    """2 -> 3: ops name their target (target_kind, target_id) and what they made (created_kind, created_id).

    Every operation of a version-2 file acted on a video: video_id becomes its target.
    """
    for column in ("target_kind", "target_id", "created_kind", "created_id"):
        conn.execute(f"ALTER TABLE ops ADD COLUMN {column} TEXT")
    conn.execute("UPDATE ops SET target_kind = 'video', target_id = video_id WHERE video_id IS NOT NULL")
    for statement in OPS_TARGET_INDEXES:
        conn.execute(statement)


def _add_units(conn: sqlite3.Connection) -> None:
    """3 -> 4: the units table of `videoferry apply` (one operation on one video)."""
    for statement in UNITS_DDL:
        conn.execute(statement)


def _add_attachments(conn: sqlite3.Connection) -> None:
    """4 -> 5: items.attachments (a JSON list of the materials the finish step attaches; NULL: none)."""
    conn.execute("ALTER TABLE items ADD COLUMN attachments TEXT")


# Upgrades from an older schema_version: version -> function run inside the upgrade transaction that brings
# the file from that version to the next.
MIGRATIONS: Mapping[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_source_version,
    2: _add_op_targets,
    3: _add_units,
    4: _add_attachments,
}


def user_tables(conn: sqlite3.Connection) -> set[str]:
    """Names of the non-internal tables in the file."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    return {r[0] for r in rows}


def stored_version(conn: sqlite3.Connection) -> int | None:
    """schema_version recorded in meta (None when absent)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else None


def problem(conn: sqlite3.Connection) -> str | None:
    """Why this (non-empty) SQLite file is not a videoferry ledger this code can use; None when it is."""
    tables = user_tables(conn)
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id != APPLICATION_ID or "meta" not in tables:
        return "it is a SQLite database of another application"
    version = stored_version(conn)
    if version is None:
        return "schema_version is missing"
    if version > SCHEMA_VERSION:
        return f"written by a newer videoferry (schema {version}; this version knows {SCHEMA_VERSION})"
    if version == SCHEMA_VERSION:
        missing = sorted(set(TABLES) - tables)
        if missing:
            return f"tables missing: {', '.join(missing)}"
    return None


def create(conn: sqlite3.Connection, now: str) -> None:
    """Create every table in an empty file (call inside a write transaction)."""
    for statement in DDL:
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.executemany(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("created_at", now), ("application", "videoferry ledger")],
    )


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring an older schema up to SCHEMA_VERSION (call inside a write transaction)."""
    version = stored_version(conn) or SCHEMA_VERSION
    while version < SCHEMA_VERSION:
        MIGRATIONS[version](conn)
        version += 1
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))

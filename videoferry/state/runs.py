"""Runs: a run's start (stale runs marked interrupted) and end, its holder, and what it keeps for later."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database

from videoferry.core.redact import sanitize
from videoferry.state.columns import dump
from videoferry.state.db import fetch
from videoferry.state.journal import event
from videoferry.state.machine import RunStatus


def new_run_id(moment: datetime) -> str:
    """A run id: its UTC start second and six random hex digits."""
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


def start(
    conn: sqlite3.Connection, now: str, run_id: str, command: str, params: Mapping[str, Any] | None
) -> None:
    """Mark runs left running as interrupted, then record this one (secret-named params dropped)."""
    for stale in fetch(conn, "SELECT run_id FROM runs WHERE status = ?", (RunStatus.RUNNING,)):
        conn.execute(
            "UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
            (RunStatus.INTERRUPTED, now, stale["run_id"]),
        )
        event(
            conn,
            now,
            kind="run",
            run_id=stale["run_id"],
            from_state=RunStatus.RUNNING,
            to_state=RunStatus.INTERRUPTED,
            message=f"found still running when run {run_id} started",
        )
    conn.execute(
        "INSERT INTO runs (run_id, command, params, status, pid, host, started_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            command,
            dump(sanitize(dict(params or {}))),
            RunStatus.RUNNING,
            os.getpid(),
            socket.gethostname(),
            now,
        ),
    )
    event(conn, now, kind="run", run_id=run_id, to_state=RunStatus.RUNNING, message=command)


def finish(
    conn: sqlite3.Connection, now: str, run_id: str, status: str, summary: Mapping[str, Any] | None
) -> bool:
    """Close a running run with its final status and summary; False when it was not running."""
    cursor = conn.execute(
        "UPDATE runs SET status = ?, finished_at = ?, summary = ? WHERE run_id = ? AND status = ?",
        (status, now, dump(sanitize(dict(summary or {}))), run_id, RunStatus.RUNNING),
    )
    if cursor.rowcount != 1:
        return False
    event(conn, now, kind="run", run_id=run_id, from_state=RunStatus.RUNNING, to_state=status)
    return True


def holder(db: Database) -> str:
    """' (run <id>, pid <pid>, started <time>)' of the latest run still marked running, or ''."""
    query = "SELECT run_id, pid, started_at FROM runs WHERE status = ? ORDER BY started_at"
    running = list(db.query(query, [RunStatus.RUNNING]))
    if not running:
        return ""
    last = running[-1]
    return f" (run {last['run_id']}, pid {last['pid']}, started {last['started_at']})"


def setting(db: Database, key: str) -> str | None:
    """The value a run kept under key in the meta table (None when none)."""
    rows = list(db.query("SELECT value FROM meta WHERE key = ?", [key]))
    return str(rows[0]["value"]) if rows else None


def keep_setting(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Keep value under key in the meta table for later runs (replacing what was there)."""
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

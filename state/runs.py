"""Runs: recording a run's start (stale runs marked interrupted) and its end, and naming a lock's holder."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database

from core.redact import sanitize
from state.columns import dump
from state.db import fetch
from state.journal import event


def new_run_id(moment: datetime) -> str:
    """A run id: its UTC start second and six random hex digits."""
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


def start(
    conn: sqlite3.Connection, now: str, run_id: str, command: str, params: Mapping[str, Any] | None
) -> None:
    """Mark runs left running as interrupted, then record this one (secret-named params dropped)."""
    for stale in fetch(conn, "SELECT run_id FROM runs WHERE status = 'running'"):
        conn.execute(
            "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE run_id = ?", (now, stale["run_id"])
        )
        event(
            conn,
            now,
            kind="run",
            run_id=stale["run_id"],
            from_state="running",
            to_state="interrupted",
            message=f"found still running when run {run_id} started",
        )
    conn.execute(
        "INSERT INTO runs (run_id, command, params, status, pid, host, started_at)"
        " VALUES (?, ?, ?, 'running', ?, ?, ?)",
        (run_id, command, dump(sanitize(dict(params or {}))), os.getpid(), socket.gethostname(), now),
    )
    event(conn, now, kind="run", run_id=run_id, to_state="running", message=command)


def finish(
    conn: sqlite3.Connection, now: str, run_id: str, status: str, summary: Mapping[str, Any] | None
) -> bool:
    """Close a running run with its final status and summary; False when it was not running."""
    cursor = conn.execute(
        "UPDATE runs SET status = ?, finished_at = ?, summary = ? WHERE run_id = ? AND status = 'running'",
        (status, now, dump(sanitize(dict(summary or {}))), run_id),
    )
    if cursor.rowcount != 1:
        return False
    event(conn, now, kind="run", run_id=run_id, from_state="running", to_state=status)
    return True


def holder(db: Database) -> str:
    """' (run <id>, pid <pid>, started <time>)' of the latest run still marked running, or ''."""
    running = list(
        db.query("SELECT run_id, pid, started_at FROM runs WHERE status = 'running' ORDER BY started_at")
    )
    if not running:
        return ""
    last = running[-1]
    return f" (run {last['run_id']}, pid {last['pid']}, started {last['started_at']})"

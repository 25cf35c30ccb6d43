"""SQLite locking steps: a write transaction (BEGIN IMMEDIATE .. COMMIT), the switch to WAL openers race."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE .. COMMIT on an autocommit connection (isolation_level None): the write lock is held
    from the first read, and any exception rolls it all back. BEGIN is inside the try, so a Ctrl-C's
    KeyboardInterrupt landing right after it (Python runs a signal's handler between any two lines) leaves
    no transaction open for the next BEGIN to fail on."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def use_wal(conn: sqlite3.Connection, timeout: float) -> str:
    """PRAGMA journal_mode=WAL; the mode SQLite answers. Processes opening a new file at once race for the
    switch, and SQLite answers the loser "database is locked" at once, without waiting its busy timeout (its
    shared lock could deadlock the winner's); so the switch is tried again for up to `timeout` seconds, then
    that error is raised. A file already in WAL answers without a lock."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(0.005, 0.05))

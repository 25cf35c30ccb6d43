"""One SQLite write transaction (BEGIN IMMEDIATE .. COMMIT), rolled back whole on any exception."""

from __future__ import annotations

import sqlite3
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

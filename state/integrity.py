"""The ledger file's integrity check at open, and the same check begun ahead (in a thread, while a job reads
its input), whose verdict the open then takes."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: A verdict begun longer ago than this is not taken (the open checks again).
AHEAD_SECONDS = 300.0

#: What identifies a file's content for a verdict: (size, mtime_ns) of the file and of its WAL (None: no
#: WAL, or an empty one, as a connection that only read leaves it).
_Stamp = tuple[tuple[int, int] | None, ...]


@dataclass(frozen=True)
class _Ahead:
    """A check begun ahead: the file as it was when it began, when, the verdict to come, and the end of
    the thread (its connection closed)."""

    stamp: _Stamp
    began: float
    verdict: Future[str]
    done: threading.Event


_ahead: dict[Path, _Ahead] = {}
_lock = threading.Lock()


def _stamp(path: Path) -> _Stamp:
    def one(p: Path) -> tuple[int, int] | None:
        try:
            st = os.stat(p)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns) if st.st_size else None

    return (one(path), one(path.with_name(path.name + "-wal")))


def quick_check(conn: sqlite3.Connection) -> str:
    """SQLite's quick_check of the whole file: "ok", or its first complaint (it reads every page: about a
    second for a ledger of 100k finished items)."""
    return str(conn.execute("PRAGMA quick_check(1)").fetchone()[0])


def _check(path: Path, verdict: Future[str]) -> None:
    """The check on a connection of its own, closed before the verdict is given (settle())."""
    try:
        conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None, check_same_thread=False)
        try:
            found = quick_check(conn)
        finally:
            conn.close()
        verdict.set_result(found)
    except BaseException as exc:  # handed to the open, which then checks by itself
        verdict.set_exception(exc)


def settle(path: Path) -> None:
    """Wait until a check begun ahead of the file `path` has ended and closed its connection. The open calls
    it before it touches the file: closing any descriptor of a file drops every POSIX lock this process
    holds on it, so a header read while the check's connection was open left the process without the shared
    lock SQLite believes it holds, and another process could then take the WAL away from under a run."""
    with _lock:
        ahead = _ahead.get(path.resolve())
    if ahead is not None:
        ahead.done.wait()


@contextmanager
def checked_meanwhile(path: Path | None) -> Iterator[None]:
    """Begin the integrity check of the existing ledger file `path` in a thread (its own connection, which
    only reads) while the body runs; the next open of that file in this process takes the verdict, unless
    the file or its WAL changed since the check began (or AHEAD_SECONDS passed): then it checks again.
    Nothing for None or a missing file. A body that raises drops the verdict (no open follows)."""
    if path is None or not path.is_file():
        yield
        return
    key = path.resolve()
    ahead = _Ahead(_stamp(key), time.monotonic(), Future(), threading.Event())

    def check() -> None:
        try:
            _check(key, ahead.verdict)
        finally:
            ahead.done.set()

    with _lock:
        _ahead[key] = ahead
    threading.Thread(target=check, name="ledger-check", daemon=True).start()
    try:
        yield
    except BaseException:
        with _lock:
            if _ahead.get(key) is ahead:
                del _ahead[key]
        raise


def pending(path: Path) -> bool:
    """Whether a verdict begun ahead for the file `path` waits for its open (an open that failed before
    its integrity check leaves it: the stamp and AHEAD_SECONDS keep a later open from taking it stale)."""
    with _lock:
        return path.resolve() in _ahead


def verdict(conn: sqlite3.Connection, path: Path) -> str:
    """The integrity check's verdict for the ledger `path` open on conn: the one begun ahead when it checked
    this file as it still is, else quick_check(conn) now."""
    key = path.resolve()
    with _lock:
        ahead = _ahead.pop(key, None)
    if ahead is not None and time.monotonic() - ahead.began < AHEAD_SECONDS:
        try:
            found = ahead.verdict.result()
        except Exception as exc:  # checked again below, worded as the open words it
            log.debug("the check begun ahead of %s failed (%s); checking again", path, type(exc).__name__)
        else:
            if _stamp(key) == ahead.stamp:
                return found
    return quick_check(conn)

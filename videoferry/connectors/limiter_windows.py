"""Settling sliding windows: a call holds its slot from admission until its answer, then counts from then."""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from videoferry.core.transaction import immediate, use_wal

__all__ = [
    "DEFAULT_FLIGHT_LIMIT",
    "SQLITE_POLL_SECONDS",
    "Window",
    "Windows",
    "MemoryWindows",
    "SQLiteWindows",
    "settling_windows",
    "sleep_until_room",
]

log = logging.getLogger(__name__)

#: An entry nobody settles (its process was killed mid-call) counts as settled this long after its admission.
#: It must exceed the longest time from admission to the request reaching the service: the pool wait,
#: connect and first write are each bounded by a timeout (API 30 + 10 + 30 s, tus 60 + 10 + 60 s).
DEFAULT_FLIGHT_LIMIT = 180.0
#: SQLite: a caller held back only by calls in flight (maybe in another process) looks again this often.
#: Nothing is lost by the delay: a settle frees its slot a whole window (>= 1 s) after it.
SQLITE_POLL_SECONDS = 0.02
#: Longest single sleep of a blocked caller (it then looks again).
_MAX_SLEEP = 1.0


@dataclass(frozen=True)
class Window:
    """At most `limit` calls whose settle time (or, in flight, admission + flight limit) is in `seconds`."""

    limit: int
    seconds: float


def settling_windows(
    per_second: int, per_minute: int, second_margin: float, minute_margin: float
) -> list[Window]:
    """The two windows, 1 s + second_margin and 60 s + minute_margin; one that can never bind is dropped."""
    if per_second < 1 or per_minute < 1:
        raise ValueError("rates must be at least 1")
    if second_margin < 0 or minute_margin < 0:
        raise ValueError("margins must not be negative")
    second = Window(per_second, 1.0 + second_margin)
    minute = Window(per_minute, 60.0 + minute_margin)
    if minute.limit <= second.limit:
        return [minute]
    if minute.limit * second.seconds > second.limit * minute.seconds:
        return [second]
    return [second, minute]


def sleep_until_room(wait: float, in_flight: bool) -> None:
    """A blocked caller's sleep between two looks (SQLite, Redis): until the blocking settled entry leaves
    its window (its time is known, at most _MAX_SLEEP at once), or SQLITE_POLL_SECONDS while a call in
    flight holds the window full (it frees its slot when it settles, maybe in another process)."""
    pause = SQLITE_POLL_SECONDS if in_flight else _MAX_SLEEP
    time.sleep(min(wait, pause) + random.uniform(0, 0.001))


class Windows(Protocol):
    """Where the calls of a limiter are counted (memory, SQLite, or pyrate for Redis)."""

    windows: list[Window]

    def admit(self, *, settled: bool, block: bool) -> int | None:
        """Take a slot (`block`: wait for one); its entry id, or None when not blocking and a window is full.

        `settled=True` stamps the entry settled at its admission (acquire()); else it stays in flight.
        """
        ...

    def settle(self, entry: int) -> None:
        """The entry's answer (or error) came back now: it counts from now on, no longer as in flight."""
        ...

    def used(self) -> int:
        """Entries the longest window counts now (in-flight ones included)."""
        ...

    def room_in(self) -> float:
        """Seconds until every window has room for one more call (0: now); a read, takes nothing."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class MemoryWindows:
    """Threads of one process: a list of entries under a Condition (settles wake the waiters)."""

    def __init__(
        self,
        windows: Sequence[Window],
        *,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.windows = list(windows)
        self.flight_limit = flight_limit
        self._clock = clock
        self._longest = max(w.seconds for w in self.windows)
        self._cond = threading.Condition()
        #: entry id -> the time it counts until: its settle time, or admission + flight limit in flight.
        self._until: dict[int, float] = {}
        self._in_flight: set[int] = set()
        self._next = 0

    def admit(self, *, settled: bool, block: bool) -> int | None:
        with self._cond:
            while True:
                now = self._clock()
                wait, _in_flight = self._wait(now)
                if wait <= 0:
                    self._next += 1
                    entry = self._next
                    self._until[entry] = now if settled else now + self.flight_limit
                    if not settled:
                        self._in_flight.add(entry)
                    return entry
                if not block:
                    return None
                # Until the blocking entry leaves its window, or a settle (notify) changes the count.
                self._cond.wait(min(wait, _MAX_SLEEP))

    def settle(self, entry: int) -> None:
        with self._cond:
            if entry in self._in_flight:
                self._in_flight.discard(entry)
                self._until[entry] = self._clock()
                self._cond.notify_all()

    def used(self) -> int:
        with self._cond:
            now = self._clock()
            longest = max(self.windows, key=lambda w: w.seconds)
            return sum(1 for until in self._until.values() if until > now - longest.seconds)

    def room_in(self) -> float:
        with self._cond:
            return self._wait(self._clock())[0]

    def close(self) -> None:
        return None

    def _wait(self, now: float) -> tuple[float, bool]:
        """Seconds until every window has room (0: room now), and whether a call in flight holds it full."""
        for entry in [e for e, until in self._until.items() if until <= now - self._longest]:
            del self._until[entry]
            self._in_flight.discard(entry)
        ordered = sorted((until, entry in self._in_flight) for entry, until in self._until.items())
        wait, in_flight = 0.0, False
        for window in self.windows:
            counted = [(until, flying) for until, flying in ordered if until > now - window.seconds]
            if len(counted) >= window.limit:
                # The window has room once its len - limit + 1 oldest entries have left it.
                until, flying = counted[len(counted) - window.limit]
                if until + window.seconds - now > wait:
                    wait, in_flight = until + window.seconds - now, flying
        return wait, in_flight


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS videoferry_calls ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, until REAL NOT NULL,"
    " settled INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS videoferry_calls_until ON videoferry_calls (key, until)",
)


class SQLiteWindows:
    """Processes of one machine: one table in a SQLite file, each admission a BEGIN IMMEDIATE transaction.

    The write lock of the transaction serialises the check and the insert across processes; an entry's row
    id lets its settle update it. Blocked callers sleep until a settled entry leaves its window, or poll
    every SQLITE_POLL_SECONDS while only calls in flight block them.
    """

    def __init__(
        self,
        db_path: str | Path,
        key: str,
        windows: Sequence[Window],
        *,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 30.0,
    ) -> None:
        self.windows = list(windows)
        self.flight_limit = flight_limit
        self._key = key
        self._clock = clock
        self._longest = max(w.seconds for w in self.windows)
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        self._conn = sqlite3.connect(
            str(db_path), timeout=busy_timeout, check_same_thread=False, isolation_level=None
        )
        use_wal(self._conn, busy_timeout)
        # No fsync per admission: a machine that crashes loses calls whose windows end before it is back.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        with self._lock, immediate(self._conn):
            for statement in _SCHEMA:
                self._conn.execute(statement)

    def admit(self, *, settled: bool, block: bool) -> int | None:
        while True:
            with self._lock, immediate(self._conn):
                now = self._clock()
                wait, in_flight = self._wait(now)
                if wait <= 0:
                    until = now if settled else now + self.flight_limit
                    cursor = self._conn.execute(
                        "INSERT INTO videoferry_calls (key, until, settled) VALUES (?, ?, ?)",
                        (self._key, until, int(settled)),
                    )
                    assert cursor.lastrowid is not None
                    return cursor.lastrowid
            if not block:
                return None
            sleep_until_room(wait, in_flight)

    def settle(self, entry: int) -> None:
        try:
            with self._lock, immediate(self._conn):
                self._conn.execute(
                    "UPDATE videoferry_calls SET until = ?, settled = 1 WHERE id = ? AND settled = 0",
                    (self._clock(), entry),
                )
        except sqlite3.Error as exc:  # the entry stays in flight: it counts until the flight limit
            log.warning("rate limiter: could not settle a call (%s); it counts as in flight", exc)

    def used(self) -> int:
        longest = max(self.windows, key=lambda w: w.seconds)
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM videoferry_calls WHERE key = ? AND until > ?",
                (self._key, self._clock() - longest.seconds),
            ).fetchone()
        return int(row[0])

    def room_in(self) -> float:
        with self._lock, immediate(self._conn):
            return self._wait(self._clock())[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _wait(self, now: float) -> tuple[float, bool]:
        """Seconds until every window has room (0: room now), and whether a call in flight holds it full."""
        self._conn.execute(
            "DELETE FROM videoferry_calls WHERE key = ? AND until <= ?", (self._key, now - self._longest)
        )
        wait, in_flight = 0.0, False
        for window in self.windows:
            (count,) = self._conn.execute(
                "SELECT count(*) FROM videoferry_calls WHERE key = ? AND until > ?",
                (self._key, now - window.seconds),
            ).fetchone()
            if count >= window.limit:
                # The window has room once its count - limit + 1 oldest entries have left it.
                until, settled = self._conn.execute(
                    "SELECT until, settled FROM videoferry_calls WHERE key = ? AND until > ? "
                    "ORDER BY until LIMIT 1 OFFSET ?",
                    (self._key, now - window.seconds, count - window.limit),
                ).fetchone()
                if float(until) + window.seconds - now > wait:
                    wait, in_flight = float(until) + window.seconds - now, not settled
        return wait, in_flight

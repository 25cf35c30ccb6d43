"""API rate limiter shared by every thread (or process, or machine), with a global pause after a 429."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videoferry.connectors.config import DEFAULT_RATE_PER_MINUTE, DEFAULT_RATE_PER_SECOND
from videoferry.connectors.limiter_backends import (
    MemoryPause,
    PauseStore,
    RedisPause,
    RedisWindows,
    SQLitePause,
    key_digest,
)
from videoferry.connectors.limiter_windows import (
    DEFAULT_FLIGHT_LIMIT,
    MemoryWindows,
    SQLiteWindows,
    Windows,
    settling_windows,
)

__all__ = [
    "DEFAULT_SECOND_MARGIN",
    "DEFAULT_MINUTE_MARGIN",
    "DEFAULT_FLIGHT_LIMIT",
    "DEFAULT_PAUSE_SECONDS",
    "LimiterStats",
    "ApiRateLimiter",
    "rate_limiter",
]

log = logging.getLogger(__name__)

#: Added to the 1 s window of the settling windows (memory, SQLite). A call counts from its answer on, an
#: upper bound of when the service counted it, so no jitter needs covering: only a service that stamps
#: arrivals in whole milliseconds (1 ms) and the two clocks' rate difference (NTP slews at most 500 ppm:
#: 0.5 ms a second); 5 ms covers both with room.
DEFAULT_SECOND_MARGIN = 0.005
#: Added to the 60 s window for the same reasons: 500 ppm of 60 s is 30 ms (0.05 % of the 300/min rate).
DEFAULT_MINUTE_MARGIN = 0.03
#: After a 429 every caller waits at least this long (spec section 8).
DEFAULT_PAUSE_SECONDS = 5.0
#: wait_for_room() looks again at least this often (another thread may free or take the room meanwhile).
_ROOM_POLL = 0.05


@dataclass
class LimiterStats:
    """Counters for reports and benchmarks."""

    acquired: int = 0
    waited_seconds: float = 0.0
    pauses: int = 0


class ApiRateLimiter:
    """Every API call (each attempt, retries included) is sent inside `with limiter.admitted():`.

    Memory and SQLite keep settling windows (connectors/limiter_windows.py): a call holds its slot from
    admission until its answer, then counts from the answer's time; a new call is admitted when fewer than
    per_second calls counted in the last 1 s + second_margin and fewer than per_minute in the last
    60 s + minute_margin (calls in flight always count); Redis keeps the same windows for several
    machines (limiter_backends.RedisWindows, timed by the Redis server's clock). pause()
    (called on a 429) makes every caller sharing the pause store wait at least pause_seconds.
    """

    def __init__(
        self,
        windows: Windows,
        pause_store: PauseStore,
        *,
        per_second: int,
        per_minute: int,
        second_margin: float = DEFAULT_SECOND_MARGIN,
        minute_margin: float = DEFAULT_MINUTE_MARGIN,
        pause_seconds: float = DEFAULT_PAUSE_SECONDS,
        backend: str = "memory",
    ) -> None:
        self.per_second = per_second
        self.per_minute = per_minute
        self.second_margin = second_margin
        self.minute_margin = minute_margin
        self.pause_seconds = pause_seconds
        self.backend = backend
        self.stats = LimiterStats()
        self._stats_lock = threading.Lock()
        #: The service counts requests to upload addresses too (an uploader learned it from a 429 of one):
        #: every uploader sharing this limiter then passes it (connectors/tus.py), not only the one that did.
        self.uploads_counted = False
        self._windows = windows
        self._pause = pause_store
        self._closed = False

    # -- constructors ---------------------------------------------------------------------------------

    @classmethod
    def memory(
        cls,
        per_second: int = 10,
        per_minute: int = 300,
        *,
        second_margin: float = DEFAULT_SECOND_MARGIN,
        minute_margin: float = DEFAULT_MINUTE_MARGIN,
        pause_seconds: float = DEFAULT_PAUSE_SECONDS,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
    ) -> ApiRateLimiter:
        """Threads of one process."""
        windows = settling_windows(per_second, per_minute, second_margin, minute_margin)
        return cls(
            MemoryWindows(windows, flight_limit=flight_limit),
            MemoryPause(),
            per_second=per_second,
            per_minute=per_minute,
            second_margin=second_margin,
            minute_margin=minute_margin,
            pause_seconds=pause_seconds,
            backend="memory",
        )

    @classmethod
    def sqlite(
        cls,
        db_path: str | Path,
        key: str,
        per_second: int = 10,
        per_minute: int = 300,
        *,
        second_margin: float = DEFAULT_SECOND_MARGIN,
        minute_margin: float = DEFAULT_MINUTE_MARGIN,
        pause_seconds: float = DEFAULT_PAUSE_SECONDS,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
    ) -> ApiRateLimiter:
        """Processes of one machine: one SQLite file (WAL, BEGIN IMMEDIATE); key is usually the token."""
        digest = key_digest(key)
        windows = settling_windows(per_second, per_minute, second_margin, minute_margin)
        return cls(
            SQLiteWindows(db_path, digest, windows, flight_limit=flight_limit),
            SQLitePause(db_path, digest),
            per_second=per_second,
            per_minute=per_minute,
            second_margin=second_margin,
            minute_margin=minute_margin,
            pause_seconds=pause_seconds,
            backend="sqlite",
        )

    @classmethod
    def redis(
        cls,
        redis: Any,
        key: str,
        per_second: int = 10,
        per_minute: int = 300,
        *,
        second_margin: float = DEFAULT_SECOND_MARGIN,
        minute_margin: float = DEFAULT_MINUTE_MARGIN,
        pause_seconds: float = DEFAULT_PAUSE_SECONDS,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
    ) -> ApiRateLimiter:
        """Several machines: the settling windows on one Redis sorted set (each step an atomic Lua script)."""
        if isinstance(redis, str):
            import redis as redis_lib

            redis = redis_lib.Redis.from_url(redis)
        digest = key_digest(key)
        windows = settling_windows(per_second, per_minute, second_margin, minute_margin)
        return cls(
            RedisWindows(redis, f"videoferry:rate:{digest}", windows, flight_limit=flight_limit),
            RedisPause(redis, f"videoferry:pause:{digest}"),
            per_second=per_second,
            per_minute=per_minute,
            second_margin=second_margin,
            minute_margin=minute_margin,
            pause_seconds=pause_seconds,
            backend="redis",
        )

    # -- use ------------------------------------------------------------------------------------------

    @contextmanager
    def admitted(self) -> Iterator[None]:
        """Wait like acquire(), hold the slot while the block runs, then settle it (on any exit).

        Wrap exactly the request: the call counts as in flight until the block ends, then from that moment
        (when its answer, or its error, came back).
        """
        entry = self._admit(settled=False)
        try:
            yield
        finally:
            self._windows.settle(entry)

    def acquire(self) -> None:
        """Block until one API call may be sent now (after any pause, inside both windows).

        The call is counted from this moment (its admission): a call sent after this counts for the
        service later, which only margins covering that delay allow for. Send calls inside admitted().
        """
        self._windows.settle(self._admit(settled=True))

    def _admit(self, *, settled: bool) -> int:
        """Wait out any pause and take a slot (a new entry: in flight unless `settled`)."""
        started = time.monotonic()
        while True:
            self._wait_out_pause()
            entry = self._windows.admit(settled=settled, block=True)
            assert entry is not None
            # A 429 seen while we waited for a slot: that slot was taken before the pause and is not
            # used (settled now, it counts as a call); take a fresh one after the pause.
            if self.pause_remaining() <= 0:
                break
            self._windows.settle(entry)
        with self._stats_lock:
            self.stats.acquired += 1
            self.stats.waited_seconds += time.monotonic() - started
        return entry

    def budget(self) -> int:
        """Calls the longest window (per minute) still admits now (0 while paused); a read, takes nothing.

        Calls in flight count as used. A call sent now while the budget is short of what is queued pushes
        a queued call past the window (a minute at the real limits); the short window only delays calls by
        under a second.
        """
        if self.pause_remaining() > 0:
            return 0
        longest = max(self._windows.windows, key=lambda w: w.seconds)
        return max(0, longest.limit - self._windows.used())

    def wait_for_room(self, timeout: float = 5.0) -> None:
        """Wait (at most `timeout` s) until a call could be admitted now: no pause, room in every window.

        Takes nothing: a caller that wants to know the moment its next call goes (a status poll times what
        it sees from then) waits here first; another thread may still take that room before it.
        """
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            wait = self.pause_remaining() or self._windows.room_in()
            if wait <= 0:
                return
            time.sleep(min(wait, left, _ROOM_POLL))

    def try_acquire(self) -> bool:
        """Take one slot if it is free now (not paused, every window has room); never waits for a slot.

        The slot is counted from now, as acquire() counts it. A held lock (SQLite's write lock, held for
        one short transaction) is waited for, not taken for "full".
        """
        if self.pause_remaining() > 0:
            return False
        entry = self._windows.admit(settled=True, block=False)
        if entry is None:
            return False
        with self._stats_lock:
            self.stats.acquired += 1
        return True

    def pause(self, seconds: float | None = None) -> None:
        """After a 429: nobody sharing this limiter sends for at least `seconds` (default pause_seconds)."""
        length = self.pause_seconds if seconds is None else max(seconds, 0.0)
        self._pause.extend(time.time() + length)
        with self._stats_lock:
            self.stats.pauses += 1
        log.warning("rate limited (429): pausing every API caller for %.1f s", length)

    def pause_remaining(self) -> float:
        """Seconds until the current pause ends (0 when not paused)."""
        return max(0.0, self._pause.until() - time.time())

    def _wait_out_pause(self) -> None:
        while True:
            remaining = self.pause_remaining()
            if remaining <= 0:
                return
            time.sleep(min(remaining, 1.0))

    def close(self) -> None:
        """Stop the background leak thread (Redis) and close connections."""
        if self._closed:
            return
        self._closed = True
        self._windows.close()
        self._pause.close()

    def __enter__(self) -> ApiRateLimiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"ApiRateLimiter(backend={self.backend!r}, per_second={self.per_second}, "
            f"per_minute={self.per_minute}, second_margin={self.second_margin}, "
            f"minute_margin={self.minute_margin})"
        )


_SHARED: dict[tuple[Any, ...], ApiRateLimiter] = {}
_SHARED_LOCK = threading.Lock()


def rate_limiter(
    key: str,
    *,
    url: str | None = None,
    per_second: int = DEFAULT_RATE_PER_SECOND,
    per_minute: int = DEFAULT_RATE_PER_MINUTE,
    second_margin: float | None = None,
    minute_margin: float | None = None,
    pause_seconds: float = DEFAULT_PAUSE_SECONDS,
) -> ApiRateLimiter:
    """The one limiter factory: this process's limiter for (key, backend, rates), made on first use.

    `key` is usually the token (stored only hashed). `url` picks the backend: None, "" or "memory" (threads
    of this process), "sqlite:///abs/path.db" (processes of one machine), "redis://host:port/db" (machines).
    Every client of a token in the process shares the same object, so the same budget and 429 pause.
    A margin left None is the backend's default (DEFAULT_SECOND_MARGIN, DEFAULT_MINUTE_MARGIN for each).
    """
    ident = (
        key_digest(key),
        url or "memory",
        per_second,
        per_minute,
        second_margin,
        minute_margin,
        pause_seconds,
    )
    with _SHARED_LOCK:
        limiter = _SHARED.get(ident)
        if limiter is None or limiter._closed:
            margins = {"second_margin": second_margin, "minute_margin": minute_margin}
            options = {name: value for name, value in margins.items() if value is not None}
            limiter = _open(url, key, per_second, per_minute, pause_seconds=pause_seconds, **options)
            _SHARED[ident] = limiter
        return limiter


def _open(url: str | None, key: str, per_second: int, per_minute: int, **options: float) -> ApiRateLimiter:
    """A new limiter on the backend the URL names (see rate_limiter)."""
    if url is None or url in ("", "memory", "memory://"):
        return ApiRateLimiter.memory(per_second, per_minute, **options)
    if url.startswith("sqlite://"):
        # sqlite:///abs/path.db -> /abs/path.db ; sqlite://relative.db -> relative.db
        path = url[len("sqlite://") :]
        if not path:
            raise ValueError("sqlite limiter URL needs a path: sqlite:///path/to/limiter.db")
        return ApiRateLimiter.sqlite(path, key, per_second, per_minute, **options)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return ApiRateLimiter.redis(url, key, per_second, per_minute, **options)
    raise ValueError("unknown limiter backend (use memory, sqlite:///path or redis://host:port/db)")

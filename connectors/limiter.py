"""API rate limiter shared by every thread (or process, or machine), with a global pause after a 429."""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyrate_limiter import AbstractBucket, InMemoryBucket, Limiter, Rate, RateItem, SQLiteBucket

from connectors.config import DEFAULT_RATE_PER_MINUTE, DEFAULT_RATE_PER_SECOND
from connectors.limiter_backends import (
    MemoryPause,
    OrderFreeRedisBucket,
    PauseStore,
    RedisPause,
    SQLitePause,
    key_digest,
)

__all__ = [
    "DEFAULT_SECOND_MARGIN",
    "DEFAULT_MINUTE_MARGIN",
    "DEFAULT_PAUSE_SECONDS",
    "LimiterStats",
    "ApiRateLimiter",
    "limiter_rates",
    "rate_limiter",
]

log = logging.getLogger(__name__)

#: Added to the 1 s window: the server counts *arrivals* in a strict sliding window and the client stamps
#: admissions, so 11 calls admitted 1.000 s apart can land 0.95 s apart. Measured on loopback under load (the
#: rate_cap benchmark: emulator in its own process, 8 transfers, 2 cores): the 31 closest arrivals of calls
#: admitted >= 1.1 s apart spanned 1.009-1.056 s, i.e. up to 91 ms of send-to-arrival jitter; so not smaller.
DEFAULT_SECOND_MARGIN = 0.1
#: Added to the 60 s window for the same reason: the jitter is in time, not a share of the window (the same
#: runs ate up to 55 ms of it); 0.25 s costs 0.4 % of the sustained 300/min rate (1.0 s cost 1.6 %).
DEFAULT_MINUTE_MARGIN = 0.25
#: After a 429 every caller waits at least this long (spec section 8).
DEFAULT_PAUSE_SECONDS = 5.0


def limiter_rates(
    per_second: int,
    per_minute: int,
    second_margin: float = DEFAULT_SECOND_MARGIN,
    minute_margin: float = DEFAULT_MINUTE_MARGIN,
) -> list[Rate]:
    """The two sliding windows: per_second in 1 s + margin, per_minute in 60 s + margin."""
    if per_second < 1 or per_minute < 1:
        raise ValueError("rates must be at least 1")
    if second_margin < 0 or minute_margin < 0:
        raise ValueError("margins must not be negative")
    second = Rate(per_second, 1000 + round(second_margin * 1000))
    minute = Rate(per_minute, 60_000 + round(minute_margin * 1000))
    # pyrate wants strictly increasing limits and non-increasing density; a window that can never bind
    # under the other one is dropped.
    if minute.limit <= second.limit:
        return [minute]
    if minute.limit * second.interval > second.limit * minute.interval:
        return [second]
    return [second, minute]


@dataclass
class LimiterStats:
    """Counters for reports and benchmarks."""

    acquired: int = 0
    waited_seconds: float = 0.0
    pauses: int = 0


class ApiRateLimiter:
    """Every API call (each attempt, retries included) calls acquire() before it is sent.

    Exact sliding windows (pyrate-limiter, SlidingWindowLog): at most per_second calls in any
    1 s + second_margin, at most per_minute in any 60 s + minute_margin. pause() (called on a 429) makes
    every caller sharing the pause store wait at least pause_seconds.
    """

    def __init__(
        self,
        bucket: AbstractBucket,
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
        self._bucket = bucket
        self._pause = pause_store
        # buffer_ms: pyrate adds it to every blocking wait; the margins above already cover jitter.
        self._limiter = Limiter(bucket, buffer_ms=5)
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
    ) -> ApiRateLimiter:
        """Threads of one process."""
        bucket = InMemoryBucket(limiter_rates(per_second, per_minute, second_margin, minute_margin))
        return cls(
            bucket,
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
    ) -> ApiRateLimiter:
        """Processes of one machine: one SQLite file (WAL) behind a file lock; key is usually the token."""
        digest = key_digest(key)
        bucket = SQLiteBucket.init_from_file(
            limiter_rates(per_second, per_minute, second_margin, minute_margin),
            table=f"vf_rate_{digest}",
            db_path=str(db_path),
            use_file_lock=True,
        )
        return cls(
            bucket,
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
    ) -> ApiRateLimiter:
        """Several machines: one Redis sorted set (atomic Lua check-and-insert). Clocks must be NTP-synced."""
        if isinstance(redis, str):
            import redis as redis_lib

            redis = redis_lib.Redis.from_url(redis)
        digest = key_digest(key)
        bucket = OrderFreeRedisBucket.init_sync(
            limiter_rates(per_second, per_minute, second_margin, minute_margin),
            redis,
            f"videoferry:rate:{digest}",
        )
        return cls(
            bucket,
            RedisPause(redis, f"videoferry:pause:{digest}"),
            per_second=per_second,
            per_minute=per_minute,
            second_margin=second_margin,
            minute_margin=minute_margin,
            pause_seconds=pause_seconds,
            backend="redis",
        )

    # -- use ------------------------------------------------------------------------------------------

    def acquire(self) -> None:
        """Block until one API call may be sent now (after any pause, inside both windows)."""
        started = time.monotonic()
        while True:
            self._wait_out_pause()
            self._take_slot()
            # A 429 seen while we waited for a slot: that slot was reserved before the pause, so it is not
            # used; take a fresh one after the pause.
            if self.pause_remaining() <= 0:
                break
        with self._stats_lock:
            self.stats.acquired += 1
            self.stats.waited_seconds += time.monotonic() - started

    def _take_slot(self) -> None:
        """Wait for a slot; every try is stamped with the clock at that moment.

        pyrate's own blocking wait (blocking=True, no timeout) records the slot at "first try + planned
        sleeps", which is earlier than the real admission when the sleep overshoots or the lock is
        contended (many threads, a file lock): the next caller is then admitted early by that drift. Here a
        failed try (timeout=0: no wait inside pyrate) is followed by a sleep until the blocking entry leaves
        its window, and the next try takes a fresh timestamp.
        """
        while not self._limiter.try_acquire("api", 1, blocking=True, timeout=0):
            time.sleep(self._wait_hint() + random.uniform(0, 0.002))

    def _wait_hint(self) -> float:
        """Seconds until the oldest entry that blocks a window leaves it (bounded to [1 ms, 1 s])."""
        return min(self._blocked_ms() + 1, 1000) / 1000.0

    def _blocked_ms(self) -> int:
        """Milliseconds until every window has room again, as the bucket reads now (0: room now)."""
        now = int(self._bucket.now())
        blocked = 0
        for rate in self._bucket.rates:
            blocking = self._bucket.peek(rate.limit - 1)
            if isinstance(blocking, RateItem):
                blocked = max(blocked, blocking.timestamp + rate.interval - now)
        return blocked

    def budget(self) -> int:
        """Calls the longest window (per minute) still admits now (0 while paused); a read, takes nothing.

        A call sent now while the budget is short of what is queued pushes a queued call past the window
        (a minute at the real limits); the short window only delays calls by under a second.
        """
        if self.pause_remaining() > 0:
            return 0
        rate = max(self._bucket.rates, key=lambda r: r.interval)
        now = int(self._bucket.now())
        low, high = 0, rate.limit  # entries are newest first: how many are still inside the window
        while low < high:
            middle = (low + high) // 2
            entry = self._bucket.peek(middle)
            if isinstance(entry, RateItem) and entry.timestamp + rate.interval > now:
                low = middle + 1
            else:
                high = middle
        return rate.limit - low

    def try_acquire(self) -> bool:
        """Take one slot if it is free now (not paused, both windows have room); never waits for a slot.

        A try can also fail because another thread or process holds the lock (SQLite's file lock): while
        the windows have room, it tries again for up to 2 s instead of answering "full".
        """
        deadline = time.monotonic() + 2.0
        while self.pause_remaining() <= 0:
            # Not blocking=False: pyrate then calls lock.acquire(False), which filelock 4 reads as a bad
            # timeout; timeout=0 is "do not wait".
            if self._limiter.try_acquire("api", 1, blocking=True, timeout=0):
                with self._stats_lock:
                    self.stats.acquired += 1
                return True
            # The windows are full (a read: the next try may still lose the race), or the lock stayed held.
            if self._blocked_ms() > 0 or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return False

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
        """Stop the background leak thread and close connections."""
        if self._closed:
            return
        self._closed = True
        self._limiter.close()
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
    second_margin: float = DEFAULT_SECOND_MARGIN,
    minute_margin: float = DEFAULT_MINUTE_MARGIN,
    pause_seconds: float = DEFAULT_PAUSE_SECONDS,
) -> ApiRateLimiter:
    """The one limiter factory: this process's limiter for (key, backend, rates), made on first use.

    `key` is usually the token (stored only hashed). `url` picks the backend: None, "" or "memory" (threads
    of this process), "sqlite:///abs/path.db" (processes of one machine), "redis://host:port/db" (machines).
    Every client of a token in the process shares the same object, so the same budget and 429 pause.
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
            limiter = _open(
                url,
                key,
                per_second,
                per_minute,
                second_margin=second_margin,
                minute_margin=minute_margin,
                pause_seconds=pause_seconds,
            )
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

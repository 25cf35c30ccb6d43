"""Limiter state stores: the 429 pause (memory, SQLite, Redis) and the Redis windows (order-free bucket)."""

from __future__ import annotations

import hashlib
import random
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from pyrate_limiter import AbstractBucket, Limiter, Rate, RateItem, RedisBucket
from pyrate_limiter.buckets.redis_bucket import LuaScript

from videoferry.connectors.limiter_windows import Window

__all__ = [
    "key_digest",
    "PauseStore",
    "MemoryPause",
    "SQLitePause",
    "RedisPause",
    "OrderFreeRedisBucket",
    "PyrateWindows",
]


def key_digest(key: str) -> str:
    """A short stable name for a limiter key (the key is usually the token: never stored in clear)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


class PauseStore(Protocol):
    """Where the "nobody calls before T" instant lives (wall-clock epoch seconds)."""

    def until(self) -> float:
        """The epoch second before which no caller may send (0 when not paused)."""
        ...

    def extend(self, until: float) -> None:
        """Make the pause last at least until `until` (never shortens it)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class MemoryPause:
    """Pause shared by the threads of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0

    def until(self) -> float:
        with self._lock:
            return self._until

    def extend(self, until: float) -> None:
        with self._lock:
            self._until = max(self._until, until)

    def close(self) -> None:
        return None


class SQLitePause:
    """Pause shared by the processes of one machine through a table in the limiter's SQLite file."""

    def __init__(self, db_path: str | Path, key: str) -> None:
        self._key = key
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            str(db_path), timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS videoferry_pause (key TEXT PRIMARY KEY, until REAL NOT NULL)"
        )

    def until(self) -> float:
        with self._lock:
            row = self._conn.execute(
                "SELECT until FROM videoferry_pause WHERE key = ?", (self._key,)
            ).fetchone()
        return float(row[0]) if row else 0.0

    def extend(self, until: float) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO videoferry_pause (key, until) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET until = max(until, excluded.until)",
                (self._key, until),
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_REDIS_EXTEND = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if wanted > current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
"""


class RedisPause:
    """Pause shared by several machines through one Redis key (expires by itself)."""

    def __init__(self, redis: Any, key: str) -> None:
        self._redis = redis
        self._key = key
        self._extend = redis.register_script(_REDIS_EXTEND)

    def until(self) -> float:
        value = self._redis.get(self._key)
        return float(value) if value is not None else 0.0

    def extend(self, until: float) -> None:
        ttl_ms = max(1, int((until - time.time()) * 1000) + 1000)
        self._extend(keys=[self._key], args=[repr(until), ttl_ms])

    def close(self) -> None:
        return None


_COUNT_UP_TO_NOW = "redis.call('ZCOUNT', bucket, window_start, now)"
_COUNT_EVERYTHING_SINCE = "redis.call('ZCOUNT', bucket, window_start, '+inf')"


class OrderFreeRedisBucket(RedisBucket):
    """pyrate's Redis bucket, counting every entry from the window start on, later stamps included.

    pyrate's script counts entries stamped up to the caller's own "now". Two machines (or two limiter
    objects) stamp before they reach Redis, so a caller stamped at t can arrive after another stamped at
    t + 1 ms has been admitted, and would not count it: seen here as 6 admitted in 6 ms with a limit of 5.
    An entry stamped later than "now" was admitted before this call, so it counts.
    """

    @classmethod
    def init_sync(cls, rates: list[Rate], redis: Any, bucket_key: str) -> OrderFreeRedisBucket:
        """Load the script into Redis and make the bucket (sync client only)."""
        if _COUNT_UP_TO_NOW not in LuaScript.PUT_ITEM:
            raise RuntimeError("pyrate-limiter's Redis script changed; review OrderFreeRedisBucket")
        script = LuaScript.PUT_ITEM.replace(_COUNT_UP_TO_NOW, _COUNT_EVERYTHING_SINCE)
        return cls(rates, redis, bucket_key, redis.script_load(script))


class PyrateWindows:
    """Windows on a pyrate bucket (Redis): entries are stamped at admission, settle() changes nothing.

    pyrate cannot move an entry's time, so these windows cannot hold a slot until the answer: the
    limiter's margins must cover the admission-to-arrival jitter (and the machines' clock differences).
    """

    def __init__(self, bucket: AbstractBucket) -> None:
        self._bucket = bucket
        self.windows = [Window(rate.limit, rate.interval / 1000.0) for rate in bucket.rates]
        # buffer_ms: pyrate adds it to every blocking wait; the margins already cover jitter.
        self._limiter = Limiter(bucket, buffer_ms=5)

    def admit(self, *, settled: bool, block: bool) -> int | None:
        """Take a slot stamped now (`settled` is moot); without `block`, retry a held lock for up to 2 s.

        pyrate's own blocking wait (blocking=True, no timeout) records the slot at "first try + planned
        sleeps", which is earlier than the real admission when the sleep overshoots or the lock is
        contended: the next caller is then admitted early by that drift. Here a failed try (timeout=0: no
        wait inside pyrate; not blocking=False, which filelock reads as a bad timeout) is followed by a
        sleep until the blocking entry leaves its window, and the next try takes a fresh timestamp.
        """
        deadline = time.monotonic() + 2.0
        while not self._limiter.try_acquire("api", 1, blocking=True, timeout=0):
            blocked = self._blocked_ms()
            if not block and (blocked > 0 or time.monotonic() > deadline):
                return None
            time.sleep(min(blocked + 1, 1000) / 1000.0 + random.uniform(0, 0.002))
        return 0

    def settle(self, entry: int) -> None:
        return None

    def used(self) -> int:
        """Entries inside the longest window (newest first in the bucket: a binary search with peek)."""
        rate = max(self._bucket.rates, key=lambda r: r.interval)
        now = int(self._bucket.now())
        low, high = 0, rate.limit
        while low < high:
            middle = (low + high) // 2
            entry = self._bucket.peek(middle)
            if isinstance(entry, RateItem) and entry.timestamp + rate.interval > now:
                low = middle + 1
            else:
                high = middle
        return low

    def room_in(self) -> float:
        return self._blocked_ms() / 1000.0

    def close(self) -> None:
        self._limiter.close()

    def _blocked_ms(self) -> int:
        """Milliseconds until every window has room again, as the bucket reads now (0: room now)."""
        now = int(self._bucket.now())
        blocked = 0
        for rate in self._bucket.rates:
            blocking = self._bucket.peek(rate.limit - 1)
            if isinstance(blocking, RateItem):
                blocked = max(blocked, blocking.timestamp + rate.interval - now)
        return blocked

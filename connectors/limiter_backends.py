"""Limiter state stores: the 429 pause (memory, SQLite, Redis) and an order-free Redis bucket."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from pyrate_limiter import Rate, RedisBucket
from pyrate_limiter.buckets.redis_bucket import LuaScript

__all__ = ["key_digest", "PauseStore", "MemoryPause", "SQLitePause", "RedisPause", "OrderFreeRedisBucket"]


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

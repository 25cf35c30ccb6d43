"""Limiter state stores: the 429 pause (memory, SQLite, Redis) and the settling windows on Redis."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from videoferry.connectors.limiter_windows import DEFAULT_FLIGHT_LIMIT, Window, sleep_until_room

__all__ = [
    "key_digest",
    "PauseStore",
    "MemoryPause",
    "SQLitePause",
    "RedisPause",
    "RedisWindows",
]

log = logging.getLogger(__name__)


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


#: One atomic step on the windows' sorted set (member: entry id, score: the second it counts until, in the
#: Redis server's clock, the one clock every machine shares). ARGV: mode ("admit", "probe", "settle" or
#: "count"), then for admit/probe: settled (0/1), flight limit, longest window, and each window's seconds and
#: limit; for settle: the entry; for count: a window's seconds. Admit and probe answer {entry or 0, seconds to
#: wait as a string, 1 when an entry in flight is what holds a window full}; settle moves an entry still in
#: flight to now; count answers the entries a window of those seconds counts now.
_WINDOWS_SCRIPT = """
redis.replicate_commands()
local zset, counter, flying = KEYS[1], KEYS[2], KEYS[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
if ARGV[1] == 'settle' then
  if redis.call('SREM', flying, ARGV[2]) == 1 then
    redis.call('ZADD', zset, 'XX', now, ARGV[2])
  end
  return 1
end
if ARGV[1] == 'count' then
  return redis.call('ZCOUNT', zset, '(' .. string.format('%.6f', now - tonumber(ARGV[2])), '+inf')
end
local settled, flight, longest = ARGV[2] == '1', tonumber(ARGV[3]), tonumber(ARGV[4])
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', zset, '-inf', now - longest)) do
  redis.call('SREM', flying, gone)
end
redis.call('ZREMRANGEBYSCORE', zset, '-inf', now - longest)
local wait, held = 0, 0
for i = 5, #ARGV, 2 do
  local seconds, limit = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local from = '(' .. string.format('%.6f', now - seconds)
  local count = redis.call('ZCOUNT', zset, from, '+inf')
  if count >= limit then
    local oldest = redis.call('ZRANGEBYSCORE', zset, from, '+inf', 'WITHSCORES', 'LIMIT', count - limit, 1)
    local until_wait = tonumber(oldest[2]) + seconds - now
    if until_wait > wait then
      wait = until_wait
      held = redis.call('SISMEMBER', flying, oldest[1])
    end
  end
end
if wait > 0 or ARGV[1] == 'probe' then
  return {0, string.format('%.6f', wait), held}
end
local entry = redis.call('INCR', counter)
if settled then
  redis.call('ZADD', zset, now, entry)
else
  redis.call('ZADD', zset, now + flight, entry)
  redis.call('SADD', flying, entry)
end
local keep = math.ceil((longest + flight) * 1000)
for _, key in ipairs(KEYS) do
  redis.call('PEXPIRE', key, keep)
end
return {entry, '0', 0}
"""


class RedisWindows:
    """Machines sharing one Redis: the settling windows of limiter_windows, on a sorted set in Redis.

    As in memory and SQLite, a call holds its slot from admission until its answer and then counts from
    the answer's time; each step is one Lua script (atomic in Redis), timed by the Redis server's clock, so
    the machines' own clocks do not matter. An entry nobody settles (its machine died mid-call) counts
    until its admission + the flight limit.
    """

    def __init__(
        self,
        redis: Any,
        key: str,
        windows: Sequence[Window],
        *,
        flight_limit: float = DEFAULT_FLIGHT_LIMIT,
    ) -> None:
        self.windows = list(windows)
        self.flight_limit = flight_limit
        self._keys = [f"{key}:calls", f"{key}:next", f"{key}:flying"]
        self._longest = max(w.seconds for w in self.windows)
        self._script = redis.register_script(_WINDOWS_SCRIPT)

    def admit(self, *, settled: bool, block: bool) -> int | None:
        while True:
            entry, wait, held = self._step("admit", settled)
            if entry:
                return entry
            if not block:
                return None
            sleep_until_room(wait, held)

    def settle(self, entry: int) -> None:
        from redis.exceptions import RedisError  # here: a run without Redis does not import it (0.1 s)

        try:
            self._script(keys=self._keys, args=["settle", entry])
        except RedisError as exc:  # the entry stays in flight: it counts until the flight limit
            reason = type(exc).__name__
            log.warning("rate limiter: could not settle a call (%s); it counts as in flight", reason)

    def used(self) -> int:
        return int(self._script(keys=self._keys, args=["count", repr(self._longest)]))

    def room_in(self) -> float:
        return self._step("probe", True)[1]

    def close(self) -> None:
        return None

    def _step(self, mode: str, settled: bool) -> tuple[int, float, bool]:
        """One admit or probe: (the new entry or 0, seconds to wait, whether a call in flight holds it)."""
        args: list[Any] = [mode, int(settled), self.flight_limit, self._longest]
        for window in self.windows:
            args += [repr(window.seconds), window.limit]
        entry, wait, held = self._script(keys=self._keys, args=args)
        return int(entry), float(wait), bool(held)

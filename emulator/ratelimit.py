"""Exact sliding-window rate limits per token: a 1-second and a 60-second window; refusals are not counted."""

from __future__ import annotations

import threading
import time
from collections import deque


class SlidingWindowLimiter:
    """Counts accepted requests per key in the last second and the last minute."""

    def __init__(self) -> None:
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def try_acquire(self, key: str, per_second: int, per_minute: int, now: float | None = None) -> bool:
        """Count one request for key and return True, or return False (not counted) when a window is full.

        A limit of 0 or less disables that window.
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            hits = self._hits.get(key)
            if hits is None:
                hits = self._hits[key] = deque()
            minute_ago = now - 60.0
            while hits and hits[0] <= minute_ago:
                hits.popleft()
            if per_minute > 0 and len(hits) >= per_minute:
                return False
            if per_second > 0:
                second_ago = now - 1.0
                recent = 0
                for stamp in reversed(hits):
                    if stamp <= second_ago:
                        break
                    recent += 1
                    if recent >= per_second:
                        return False
            hits.append(now)
            return True

    def forget(self, key: str) -> None:
        """Drop the history of one key."""
        with self._lock:
            self._hits.pop(key, None)

    def clear(self) -> None:
        """Drop every history."""
        with self._lock:
            self._hits.clear()

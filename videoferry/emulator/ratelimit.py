"""Exact sliding-window rate limits per token (1 s and 60 s; refusals not counted), and the poll clock."""

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


class PollClock:
    """When each video was last polled (poll-rule-429: spec 8 allows one poll of a video per 5 s)."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def too_soon(self, video_id: str, interval: float, now: float | None = None) -> bool:
        """Whether a poll now comes sooner than `interval` seconds after the last answered one."""
        now = time.monotonic() if now is None else now
        with self._lock:
            last = self._last.get(video_id)
        return last is not None and now - last < interval

    def mark(self, video_id: str, now: float | None = None) -> None:
        """Record an answered poll of the video."""
        with self._lock:
            self._last[video_id] = time.monotonic() if now is None else now

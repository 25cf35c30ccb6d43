"""The spec's poll rule for the client: GETs of one video at most one per interval, one at a time."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


class PollPacing:
    """GETs of one video at most one per `interval` seconds, counted from the last answer (the spec's poll
    rule): an attempt waits its turn (at most `interval`); GETs of one video run one at a time."""

    #: Videos remembered before those answered longer than `interval` ago are forgotten.
    KEEP = 4096

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._answered: dict[str, float] = {}
        self._locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def one_at_a_time(self, key: str) -> Iterator[None]:
        """Hold the video's lock for one whole GET (its retries included)."""
        with self._lock:
            video_lock = self._locks.setdefault(key, threading.Lock())
        with video_lock:
            yield

    @contextlib.contextmanager
    def turn(self, key: str) -> Iterator[None]:
        """One attempt: wait until `interval` after the last answer for this video, then note this answer."""
        with self._lock:
            last = self._answered.get(key)
        if last is not None:
            wait = last + self.interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        try:
            yield
        finally:
            now = time.monotonic()
            with self._lock:
                self._answered[key] = now
                if len(self._answered) > self.KEEP:
                    for old in [k for k, at in self._answered.items() if now - at >= self.interval]:
                        del self._answered[old]
                        lock = self._locks.get(old)
                        if lock is not None and not lock.locked():
                            del self._locks[old]

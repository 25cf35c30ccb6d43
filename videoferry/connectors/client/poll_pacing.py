"""The service's poll rule for the client: GETs of one video at most one per interval, one at a time."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

from videoferry.connectors.config import POLL_RULE_SECONDS

#: Not in the spec: the header the emulator states its poll rule in (seconds), when its control API set one
#: other than the spec's 5 s: the only way a test makes a run poll faster (no user option goes below 5 s).
#: The transport learns it from the emulator only (Transport.emulator); from any other server the spec's
#: 5 s is the rule, whatever it states.
POLL_RULE_HEADER = "x-poll-rule-seconds"
#: Stated rules outside these bounds are ignored (the spec's 5 s holds): never 20 polls a second, never
#: fewer than one a minute (12 times the spec's rule).
STATED_RULE_BOUNDS = (0.05, 60.0)


class PollRule:
    """The seconds the service allows between two GETs of one video: the spec's 5 unless the emulator states
    another in POLL_RULE_HEADER (learned from its answers; the last stated value holds)."""

    def __init__(self, seconds: float = POLL_RULE_SECONDS) -> None:
        self.seconds = seconds

    def learn(self, stated: str | None) -> None:
        """Take the rule an answer states (None, malformed or out of bounds: nothing changes)."""
        if stated is None:
            return
        try:
            seconds = float(stated)
        except ValueError:
            return
        low, high = STATED_RULE_BOUNDS
        if math.isfinite(seconds) and low <= seconds <= high:
            self.seconds = seconds

    def interval_for(self, option: float) -> float:
        """The seconds between a job's polls for its --poll-interval: at the least the option allows (the
        spec's 5 s, every job's default) it means as often as the service allows; above it, the option, never
        sooner than the service allows."""
        if option <= POLL_RULE_SECONDS:
            return self.seconds
        return max(option, self.seconds)


class PollPacing:
    """GETs of one video at most one per the rule's interval, counted from the last answer (the service's
    poll rule): an attempt waits its turn (at most the interval); GETs of one video run one at a time."""

    #: Videos remembered before those answered longer than the interval ago are forgotten.
    KEEP = 4096

    def __init__(self, rule: PollRule) -> None:
        self.rule = rule
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
        """One attempt: wait until the interval after this video's last answer, then note this answer."""
        interval = self.rule.seconds
        with self._lock:
            last = self._answered.get(key)
        if last is not None:
            wait = last + interval - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        try:
            yield
        finally:
            now = time.monotonic()
            with self._lock:
                self._answered[key] = now
                if len(self._answered) > self.KEEP:
                    for old in [k for k, at in self._answered.items() if now - at >= interval]:
                        del self._answered[old]
                        lock = self._locks.get(old)
                        if lock is not None and not lock.locked():
                            del self._locks[old]

"""Items whose lost create answer was looked up too early: each goes again once its settle time has passed."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

#: A lookup that could not decide (its listing failed, several candidates) is parked again after a pause of
#: RETRY_PAUSE x the times it failed, at most RETRIES times a run; after them it waits for the rounds once
#: nothing runs (tasks/migrate/schedule.py), or for the next run.
RETRY_PAUSE = 2.0
RETRIES = 3
#: Due moments are rounded up to a multiple of this many seconds: the lost answers due within it are looked
#: up together, by one listing of their parent taken after all their settle times (not one listing each).
GRID = 2.0


@dataclass
class Parked:
    """Items in creating a transfer set aside because their lookup was too early to believe "not there"
    (lookup.TooEarly), each with the moment (monotonic) it can tell, or could not decide (retry); thread-safe
    (transfers park, the schedule takes).

    The schedule (tasks/migrate/schedule.py) takes each as soon as it is due and sends it again in a batch
    of its own, ahead of the batches not started yet: a lost answer is settled by a listing taken after its
    own settle time, not after the round of every batch has ended. A parked item is in no batch.
    """

    _due: dict[str, float] = field(default_factory=dict)
    _failed: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def park(self, key: str, wait: float) -> None:
        """Set the item aside until `wait` seconds from now."""
        with self._lock:
            self._due[key] = _on_grid(time.monotonic() + max(0.0, wait))

    def retry(self, key: str) -> bool:
        """Set aside an item whose lookup could not decide, for RETRY_PAUSE x the times it could not; False
        (not parked) after RETRIES times."""
        with self._lock:
            failed = self._failed[key] = self._failed.get(key, 0) + 1
            if failed > RETRIES:
                return False
            self._due[key] = _on_grid(time.monotonic() + RETRY_PAUSE * failed)
            return True

    def take_due(self) -> list[str]:
        """The items whose moment has come, oldest first; they are no longer parked."""
        now = time.monotonic()
        with self._lock:
            due = sorted((at, key) for key, at in self._due.items() if at <= now)
            for _at, key in due:
                del self._due[key]
        return [key for _at, key in due]

    def take(self, keys: list[str]) -> list[str]:
        """Those of keys still parked; they are no longer parked."""
        with self._lock:
            return [key for key in keys if self._due.pop(key, None) is not None]

    def keys(self) -> frozenset[str]:
        """The items parked now."""
        with self._lock:
            return frozenset(self._due)

    def __len__(self) -> int:
        with self._lock:
            return len(self._due)


def _on_grid(moment: float) -> float:
    """The moment rounded up to a multiple of GRID (never earlier: a settle time is never cut short)."""
    return math.ceil(moment / GRID) * GRID

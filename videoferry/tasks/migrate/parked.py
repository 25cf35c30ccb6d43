"""Items whose lost create answer was looked up too early: each goes again once its settle time has passed."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: A lookup that could not decide (its listing failed, several candidates) is parked again after a pause of
#: RETRY_PAUSE x the times it failed, at most RETRIES times a run; after them it waits for the rounds once
#: nothing runs (tasks/migrate/schedule.py), or for the next run.
RETRY_PAUSE = 2.0
RETRIES = 3
#: Due moments are rounded up to a multiple of this many seconds: the lost answers due within it are looked
#: up together, by one listing of their parent taken after all their settle times (not one listing each).
GRID = 2.0
#: A parked item may go once before its settle time, this long after it was parked, for an early look: one
#: listing (shared by those then taken) that can show "there", never "not there" (take_early; the schedule
#: takes them only while the calls have room: tasks/migrate/schedule.py). Past the emulator's list-lag
#: variant (3 s), so a service whose lists lag that much still shows the video to it.
EARLY_LOOK_SECONDS = 4.0


@dataclass
class Parked:
    """Items in creating a transfer set aside because their lookup was too early to believe "not there"
    (lookup.TooEarly), each with the moment (monotonic) it can tell, or could not decide (retry); thread-safe
    (transfers park, the schedule takes).

    The schedule (tasks/migrate/schedule.py) takes each as soon as it is due and sends it again in a batch
    of its own, ahead of the batches not started yet: a lost answer is settled by a listing taken after its
    own settle time, not after the round of every batch has ended. Once per loss it may take one sooner
    (take_early) for an early look: a listing taken after the loss adopts a video that is there, and the
    item is parked again for the rest of its settle time when it is not. A parked item is in no batch.
    """

    _due: dict[str, float] = field(default_factory=dict)
    _failed: dict[str, int] = field(default_factory=dict)
    #: When each item parked until its settle time was parked (monotonic), while its early look is to come.
    _parked_at: dict[str, float] = field(default_factory=dict)
    #: The due moment each item had when it went for its early look: parked again for the same moment, it
    #: has had it (a later loss of the same item parks for a later moment and gets one of its own).
    _looked: dict[str, float] = field(default_factory=dict)
    #: Items taken for an early look and not yet looked up (looks_early()).
    _early: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def park(self, key: str, wait: float) -> None:
        """Set the item aside until `wait` seconds from now (its settle time); an early look may come
        first."""
        now = time.monotonic()
        due = _on_grid(now + max(0.0, wait))
        with self._lock:
            self._due[key] = due
            self._early.discard(key)
            looked = self._looked.get(key)
            if looked is None or due > looked + GRID:
                self._looked.pop(key, None)
                self._parked_at[key] = now

    def take_early(self, age: float, room: Callable[[], bool]) -> list[str]:
        """Items parked at least `age` seconds ago, not yet looked up early, whose settle time is more than a
        grid step away, oldest first, when room() says the calls can spare a listing (asked only when there
        are such items); they are no longer parked, and each looks up early once (looks_early())."""
        now = time.monotonic()
        with self._lock:
            ready = sorted(
                (at, key)
                for key, at in self._parked_at.items()
                if at + age <= now and self._due.get(key, now) - now > GRID
            )
        if not ready or not room():
            return []
        taken = []
        with self._lock:
            for _at, key in ready:
                due = self._due.pop(key, None)
                self._parked_at.pop(key, None)
                if due is None:
                    continue
                self._looked[key] = due
                self._early.add(key)
                taken.append(key)
        return taken

    def looks_early(self, key: str) -> bool:
        """Whether the item was taken for its early look and has not looked yet (then it has)."""
        with self._lock:
            if key not in self._early:
                return False
            self._early.discard(key)
            return True

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
                self._parked_at.pop(key, None)
        return [key for _at, key in due]

    def take(self, keys: list[str]) -> list[str]:
        """Those of keys still parked; they are no longer parked."""
        with self._lock:
            for key in keys:
                self._parked_at.pop(key, None)
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

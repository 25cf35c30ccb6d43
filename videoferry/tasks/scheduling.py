"""The scheduling protocol of the jobs whose work runs round after round: one loop of named phases.

A job's schedule (tasks/migrate/schedule.py: items in batches; tasks/apply/schedule.py: units) says, round
after round, what to do next: settle leftovers (work an earlier run or round left with an unknown outcome goes
first), start what can start (within the transfers), poll what waits (the service's processing), finish what
is done, and stop on a bound (everything ended: True; the wait bound, or nothing left that can end: False).
Work runs elsewhere (threads, or Prefect task runs) behind a Handle; a stopped run (Stop) starts nothing more
and ends once nothing runs.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from videoferry.tasks.stop import Stop

log = logging.getLogger(__name__)


class Handle(Protocol):
    """A piece of work running (a concurrent.futures.Future, or a Prefect future's adapter)."""

    def done(self) -> bool:
        """Whether the work has ended (without blocking)."""

    def result(self) -> Any:
        """What the work returned (raises what it raised)."""


def when_done(handle: Handle, callback: Callable[[], None]) -> None:
    """callback() (from any thread) once the handle's work has ended, when the handle can tell
    (add_done_callback, as a concurrent.futures.Future's); else the rounds' tick notices it."""
    add = getattr(handle, "add_done_callback", None)
    if callable(add):
        add(lambda _ended: callback())


@dataclass
class WaitBound:
    """The bound of waiting for the service's processing (None: no bound). It counts from the moment nothing
    was being transferred any more: a long run is not cut short by its own upload time."""

    timeout: float | None
    since: float | None = None

    def exceeded(self, *, working: bool) -> bool:
        """Whether the wait is over its bound now (working: something is still being transferred)."""
        now = time.monotonic()
        if working:
            self.since = None
            return False
        if self.since is None:
            self.since = now
        if self.timeout is not None and now - self.since > self.timeout:
            log.warning("stopped waiting for processing after %.0f s; rerun to go on", self.timeout)
            return True
        return False


class Schedule(ABC):
    """One run's work, round after round, in named phases (see the module's docstring)."""

    def __init__(self, stop: Stop, *, tick: float, on_tick: Callable[[], None] | None = None) -> None:
        self.stop = stop
        self.tick = tick
        self.on_tick = on_tick
        self._nudged = threading.Event()
        stop.wakes(self._nudged)

    def nudge(self) -> None:
        """Begin the next round now, not a tick later (work ended, or news came that a round acts on); from
        any thread. A nudge during a round ends the wait after it."""
        self._nudged.set()

    def run(self) -> bool:
        """Round after round until the bound: True when every piece of work ended, False when the run stopped,
        or the wait bound (or nothing that could still end) ended it; the ledger keeps everything."""
        while True:
            self._nudged.clear()
            self.collect()
            if self.stop.is_set():
                if not self.busy():
                    return False
            else:
                self.settle_leftovers()
                self.start_what_can_start()
                self.poll_what_waits()
                self.finish_what_is_done()
                ended = self.stop_on_bound()
                if ended is not None:
                    return ended
            if self.on_tick is not None:
                self.on_tick()
            self._nudged.wait(self.tick)  # a stop sets it too (Stop.wakes)

    @abstractmethod
    def collect(self) -> None:
        """Take in the work that ended since the last round (and read what the rounds decide on)."""

    @abstractmethod
    def busy(self) -> bool:
        """Whether work is still running (a stopped run waits for it)."""

    @abstractmethod
    def settle_leftovers(self) -> None:
        """Work left with an unknown outcome goes first, before anything new could land where it looks."""

    @abstractmethod
    def start_what_can_start(self) -> None:
        """Submit the work that can start now, within the transfers."""

    @abstractmethod
    def poll_what_waits(self) -> None:
        """Ask the service about what waits for its processing, when a poll is due."""

    @abstractmethod
    def finish_what_is_done(self) -> None:
        """The last step of the work the service has finished processing."""

    @abstractmethod
    def stop_on_bound(self) -> bool | None:
        """True: every piece of work ended; False: the wait bound, or nothing that can end; None: go on."""

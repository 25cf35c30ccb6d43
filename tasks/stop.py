"""A run's stop signal: set once, by what stopped the run (its exit status is the job map's, flows/job.py)."""

from __future__ import annotations

import threading


class Stop:
    """Once set, every worker of the run stops taking new work; cause says why (a refused token, a
    configuration error, the user's Ctrl-C). Waits end early when it is set (threading.Event-like)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.cause: BaseException | None = None

    def __call__(self, cause: BaseException) -> None:
        """Stop the run because of cause (the first cause is kept)."""
        with self._lock:
            if self.cause is None:
                self.cause = cause
        self._event.set()

    def is_set(self) -> bool:
        """Whether the run was stopped."""
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait at most timeout seconds; True once the run is stopped."""
        return self._event.wait(timeout)

    @property
    def reason(self) -> str:
        """What stopped the run ("" while it runs)."""
        return str(self.cause) if self.cause is not None else ""

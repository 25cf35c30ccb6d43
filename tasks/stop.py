"""A run's stop signal: set once, by what stopped the run (its exit status is the job map's, flows/job.py);
and the bound on a service that stopped answering."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: A run stops once its calls have failed for this long with no answer from the service in between (each
#: failure after the client's own retries): a service gone mid-run ends the run in about a minute, not
#: after the whole wait bound (an hour by default) of silent polling.
OUTAGE_SECONDS = 60.0


class ServiceUnavailable(Exception):
    """The service kept failing (after the client's retries) where the run cannot go on without it."""


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


class Outage:
    """The bound on a service gone mid-run: failed() after each call that failed without any answer (after
    the client's retries); once the service has answered nothing for OUTAGE_SECONDS while calls kept
    failing, the run is stopped with ServiceUnavailable naming the last failure (its host and what failed).
    last_answer(): when the service last answered anything (the transport's clock, time.monotonic())."""

    def __init__(self, stop: Stop, last_answer: Callable[[], float], seconds: float = OUTAGE_SECONDS) -> None:
        self.stop = stop
        self.last_answer = last_answer
        self.seconds = seconds
        self.failures = 0
        self._lock = threading.Lock()

    def failed(self, what: str) -> None:
        """A call failed without an answer (`what`: its failure in words, naming the host)."""
        silent = time.monotonic() - self.last_answer()
        with self._lock:
            self.failures += 1
            failures = self.failures
        if silent >= self.seconds:
            self.stop(
                ServiceUnavailable(
                    f"the service has not answered for {silent:.0f} s ({failures} calls failed, the last:"
                    f" {what}); the run stopped rather than wait on: rerun the same command once it answers"
                )
            )

"""A run's stop signal: set once, by what stopped the run (its exit status is the job map's, flows/job.py);
and the bound on a service that stopped answering."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from connectors.config import ConfigError

#: A run stops once its calls have failed for this long with no answer from the service in between (each
#: failure after the client's own retries): a service gone mid-run ends the run in about a minute, not
#: after the whole wait bound (an hour by default) of silent polling.
OUTAGE_SECONDS = 60.0
#: The environment variable that sets another bound (seconds, at least 1).
OUTAGE_ENV = "VIDEOFERRY_OUTAGE_SECONDS"


def outage_seconds() -> float:
    """The bound on a service gone mid-run: VIDEOFERRY_OUTAGE_SECONDS, else OUTAGE_SECONDS (ConfigError
    naming the variable and its value when it is not a number of seconds of at least 1)."""
    raw = os.environ.get(OUTAGE_ENV, "").strip()
    if not raw:
        return OUTAGE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value >= 1:  # NaN too
        raise ConfigError(f"{OUTAGE_ENV}={raw!r}: give a number of seconds, at least 1")
    return value


class ServiceUnavailable(Exception):
    """The service kept failing (after the client's retries) where the run cannot go on without it."""


class Stop:
    """Once set, every worker of the run stops taking new work; cause says why (a refused token, a
    configuration error, the user's Ctrl-C). Waits end early when it is set (threading.Event-like)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.cause: BaseException | None = None
        self._wakes: list[threading.Event] = []

    def wakes(self, event: threading.Event) -> None:
        """Set event too when the run is stopped (a wait on it then ends early, as on this one)."""
        with self._lock:
            self._wakes.append(event)
            stopped = self._event.is_set()
        if stopped:
            event.set()

    def __call__(self, cause: BaseException) -> None:
        """Stop the run because of cause (the first cause is kept)."""
        with self._lock:
            if self.cause is None:
                self.cause = cause
            wakes = list(self._wakes)
        self._event.set()
        for event in wakes:
            event.set()

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
    the client's retries). The outage begins at the first such failure with no answer since; once it has
    lasted `seconds` and calls still fail, the run is stopped with ServiceUnavailable naming the last failure
    (its host and what failed). One failed call alone never stops a run, however long the calls before it
    were apart. last_answer(): when the service last answered anything (time.monotonic())."""

    def __init__(self, stop: Stop, last_answer: Callable[[], float], seconds: float = OUTAGE_SECONDS) -> None:
        self.stop = stop
        self.last_answer = last_answer
        self.seconds = seconds
        self.failures = 0
        self._since: float | None = None
        self._lock = threading.Lock()

    def failed(self, what: str) -> None:
        """A call failed without an answer (`what`: its failure in words, naming the host)."""
        now = time.monotonic()
        with self._lock:
            if self._since is None or self.last_answer() > self._since:  # it answered since: a new outage
                self._since, self.failures = now, 0
            self.failures += 1
            failures, lasted = self.failures, now - self._since
        if lasted >= self.seconds:
            calls = "1 call" if failures == 1 else f"{failures} calls"
            self.stop(
                ServiceUnavailable(
                    f"the service has not answered for {lasted:.0f} s ({calls} failed, the last: {what}); the"
                    " run stopped rather than wait on: rerun the same command once it answers"
                )
            )

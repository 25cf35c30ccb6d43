"""A run's stop signal: set once, by what stopped the run (its exit status is the job map's, flows/job.py),
an upload it ended between two chunks (UploadStopped); and the bound on a service that stopped answering
(held by the client: connectors/client/silence.py)."""

from __future__ import annotations

import os
import threading

from connectors.config import ConfigError

#: A run stops once the service has answered none of its calls for this long, whether they were refused or
#: hang (each attempt's timeout is what is left of it: connectors/client/silence.Silence): a service gone
#: or frozen mid-run ends the run in about a minute, not after retries of whole timeouts or the wait bound.
OUTAGE_SECONDS = 60.0
#: The environment variable that sets another bound (seconds, at least 1).
OUTAGE_ENV = "VIDEOFERRY_OUTAGE_SECONDS"


class UploadStopped(Exception):
    """The run stopped between two chunks of an upload: what the upload belongs to stays open for the next
    run (an op's intent, settled first; an item uploading, resumed from the server's offset)."""


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

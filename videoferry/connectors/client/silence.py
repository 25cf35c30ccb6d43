"""The bound on a service that answers nothing (refused, hanging): each attempt's timeout drawn from it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from videoferry.connectors.errors import ServiceSilentError

__all__ = ["Silence"]

#: The shortest timeout an attempt is given while some of the bound is left (a budget of 0.01 s would fail a
#: healthy call for nothing; the bound is then overrun by at most this).
MIN_ATTEMPT_SECONDS = 1.0


class Silence:
    """How long the service has answered nothing, and the bound on it (`bound` seconds; None: no bound).

    A silence begins when an attempt gets no answer at all (refused, DNS, reset, no answer in time): at the
    start of that attempt, or at the last answer when one came after that start. Any answer (an HTTP error
    too) ends it. While one lasts, each attempt's timeout is what is left of the bound (at most the client's
    own timeout, at least MIN_ATTEMPT_SECONDS), so a service that accepts connections and never answers is
    waited on for about the bound, not attempts x timeout; once the bound is spent, no attempt is sent
    (ServiceSilentError) and `on_silent(message)` is called once. Thread-safe."""

    def __init__(self, bound: float | None = None) -> None:
        self.bound = bound
        #: Called once, with the message, when the bound is first spent (the run's stop: flows/job.run_job).
        self.on_silent: Callable[[str], None] | None = None
        #: When the service last answered anything (time.monotonic()).
        self.last_answer = time.monotonic()
        self._since: float | None = None
        self._failures = 0
        self._last_failure = ""
        self._said = False
        self._lock = threading.Lock()

    def answered(self) -> None:
        """The service answered (any HTTP status): a silence, if any, is over."""
        with self._lock:
            self.last_answer = time.monotonic()
            self._since, self._failures = None, 0

    def no_answer(self, started: float, what: str) -> None:
        """An attempt begun at `started` (time.monotonic()) got no answer; `what`: its failure in words."""
        with self._lock:
            if self._since is None:
                self._since = max(started, self.last_answer)
            self._failures += 1
            self._last_failure = what
            message = self._spent_message()
        if message is not None:
            self._say(message)

    def timeout(self, timeout: float, operation: str | None = None) -> float:
        """The timeout of the next attempt (at most `timeout`); ServiceSilentError (naming `operation`) when
        the bound is spent."""
        with self._lock:
            if self.bound is None:
                return timeout
            message = self._spent_message()
            left = self.bound - self.silent_for()
        if message is not None:
            self._say(message)
            raise ServiceSilentError(message, operation=operation)
        return max(min(timeout, left), MIN_ATTEMPT_SECONDS)

    def sleep(self, seconds: float) -> None:
        """A retry's backoff, cut to what is left of the bound (the next attempt then says it is spent)."""
        if self.bound is not None:
            with self._lock:
                seconds = min(seconds, max(self.bound - self.silent_for(), 0.0))
        if seconds > 0:
            time.sleep(seconds)

    def silent_for(self) -> float:
        """Seconds the current silence has lasted (0 while the service answers)."""
        return 0.0 if self._since is None else time.monotonic() - self._since

    def _spent_message(self) -> str | None:
        if self.bound is None or self._since is None:
            return None
        lasted = self.silent_for()
        if lasted < self.bound:
            return None
        calls = "1 call" if self._failures == 1 else f"{self._failures} calls"
        return (
            f"the service has not answered for {lasted:.0f} s, its bound VIDEOFERRY_OUTAGE_SECONDS being"
            f" {self.bound:g} s ({calls} failed, the last: {self._last_failure}); the run stopped rather than"
            " wait on: rerun the same command once it answers"
        )

    def _say(self, message: str) -> None:
        with self._lock:
            said, self._said = self._said, True
        if not said and self.on_silent is not None:
            self.on_silent(message)

"""The service's clock as seen from here: learned from its Date headers, never assumed to agree with ours."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

#: A Date header has whole seconds: the service's time lies up to this much after what it says.
DATE_RESOLUTION = 1.0


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class ServiceClock:
    """Bounds on (service time - our time), narrowed by every answer that says what time it is.

    An answer sent between our local times `before` and `after` that says "it is T" (the Date header, or the
    created_at of an object just created) proves  T - after <= offset <= T + resolution - before.  The
    intersection of such intervals is kept; when they stop intersecting (a clock was stepped) the newest
    interval wins. offset() is the middle of the interval, uncertainty() half its width.
    """

    def __init__(self) -> None:
        self._low: float | None = None
        self._high: float | None = None
        self._lock = threading.Lock()

    def observe(
        self,
        local_before: datetime,
        local_after: datetime,
        service_time: datetime,
        resolution: float | None = None,
    ) -> None:
        """Learn that the service's time was `service_time` at a moment between our two local times.

        `service_time` is a Date header, or the created_at of an object created by the request that was sent
        at `local_before` and answered at `local_after` (use it when no Date header is ever seen).

        `resolution`: how much later than `service_time` the service's true time may have been (a truncated
        value); by default 1 s for a value with whole seconds, else 0. Naive datetimes are taken as UTC.
        """
        service_time, local_before, local_after = (
            _aware(t) for t in (service_time, local_before, local_after)
        )
        if resolution is None:
            resolution = DATE_RESOLUTION if service_time.microsecond == 0 else 0.0
        low = (service_time - local_after).total_seconds()
        high = (service_time - local_before).total_seconds() + max(resolution, 0.0)
        with self._lock:
            if self._low is None or self._high is None or low > self._high or high < self._low:
                self._low, self._high = low, high
            else:
                self._low, self._high = max(self._low, low), min(self._high, high)

    def observe_date_header(self, sent: datetime, received: datetime, header: str | None) -> None:
        """Learn from an HTTP Date header (ignored when missing or unreadable)."""
        if not header:
            return
        try:
            when = parsedate_to_datetime(header)
        except (TypeError, ValueError, IndexError):
            return
        self.observe(sent, received, when, DATE_RESOLUTION)

    def offset(self) -> float | None:
        """Service time minus our time, in seconds; None until an answer has told."""
        with self._lock:
            if self._low is None or self._high is None:
                return None
            return (self._low + self._high) / 2

    def uncertainty(self) -> float:
        """How far the true offset may lie from offset(), in seconds (infinite while unknown)."""
        with self._lock:
            if self._low is None or self._high is None:
                return float("inf")
            return (self._high - self._low) / 2

    def to_service(self, local: datetime) -> datetime:
        """Our time `local` on the service's clock (unchanged while the offset is unknown)."""
        offset = self.offset()
        return local if offset is None else local + timedelta(seconds=offset)

    def __repr__(self) -> str:
        offset = self.offset()
        shown = "unknown" if offset is None else f"{offset:+.2f}s ±{self.uncertainty():.2f}s"
        return f"ServiceClock({shown})"

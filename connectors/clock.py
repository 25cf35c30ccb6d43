"""The service's clock as seen from here: learned from its Date headers, never assumed to agree with ours."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

#: A Date header has whole seconds: the service's time lies up to this much after what it says.
DATE_RESOLUTION = 1.0


class ServiceClock:
    """Bounds on (service time - our time), narrowed by every answer that says what time it is.

    An answer sent between our local times `sent` and `received` that says "it is T" (the Date header, or the
    created_at of an object just created) proves  T - received <= offset <= T + resolution - sent.  The
    intersection of such intervals is kept; when they stop intersecting (a clock was stepped) the newest
    interval wins. offset() is the middle of the interval, uncertainty() half its width.
    """

    def __init__(self) -> None:
        self._low: float | None = None
        self._high: float | None = None
        self._lock = threading.Lock()

    def observe(
        self, sent: datetime, received: datetime, service_time: datetime, resolution: float = 0.0
    ) -> None:
        """Learn from one answer: between our `sent` and `received`, the service's time was `service_time`."""
        if service_time.tzinfo is None:
            service_time = service_time.replace(tzinfo=UTC)
        low = (service_time - received).total_seconds()
        high = (service_time - sent).total_seconds() + resolution
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

"""The service's clock: bounds learned from answers, narrowed, reset when a clock steps, applied."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from videoferry.connectors.clock import ServiceClock

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_unknown_until_an_answer_tells() -> None:
    clock = ServiceClock()
    assert clock.offset() is None and clock.uncertainty() == float("inf")
    assert clock.to_service(T0) == T0


def test_a_date_header_ten_minutes_behind() -> None:
    clock = ServiceClock()
    sent, received = T0, T0 + timedelta(milliseconds=40)
    clock.observe_date_header(sent, received, format_datetime(T0 - timedelta(minutes=10), usegmt=True))
    offset = clock.offset()
    assert offset is not None and abs(offset + 600) <= 1.0
    assert clock.uncertainty() <= 0.55
    assert abs((clock.to_service(T0) - (T0 - timedelta(minutes=10))).total_seconds()) <= 1.0


def test_answers_narrow_the_estimate_and_a_stepped_clock_replaces_it() -> None:
    clock = ServiceClock()
    clock.observe(T0, T0 + timedelta(seconds=2), T0 + timedelta(seconds=300))
    wide = clock.uncertainty()
    clock.observe(T0 + timedelta(seconds=10), T0 + timedelta(seconds=10.1), T0 + timedelta(seconds=310.05))
    assert clock.uncertainty() < wide
    offset = clock.offset()
    assert offset is not None and abs(offset - 300) < 0.1
    clock.observe(T0 + timedelta(seconds=20), T0 + timedelta(seconds=20.1), T0 - timedelta(seconds=580), 0.0)
    offset = clock.offset()
    assert offset is not None and abs(offset + 600) < 0.2  # disjoint: the newest answer wins


def test_unreadable_or_missing_headers_teach_nothing() -> None:
    clock = ServiceClock()
    for header in (None, "", "yesterday", "Mon, 99 Foo 2026"):
        clock.observe_date_header(T0, T0, header)
    assert clock.offset() is None


def test_whole_second_values_are_widened_by_default() -> None:
    """A created_at with whole seconds may be up to 1 s earlier than the service's true time."""
    clock = ServiceClock()
    true_offset = -600.7  # the service says T0 - 600.7 s, truncated to 11:49:59 (0.3 s early)
    service = T0 + timedelta(seconds=true_offset)
    truncated = service.replace(microsecond=0)
    clock.observe(local_before=T0 - timedelta(milliseconds=5), local_after=T0, service_time=truncated)
    offset, spread = clock.offset(), clock.uncertainty()
    assert offset is not None and abs(offset - true_offset) <= spread
    narrow = ServiceClock()
    narrow.observe(T0 - timedelta(milliseconds=5), T0, truncated, resolution=0.0)
    narrow_offset = narrow.offset()
    assert narrow_offset is not None and abs(narrow_offset - true_offset) > narrow.uncertainty()


def test_naive_times_are_utc() -> None:
    clock = ServiceClock()
    naive = T0.replace(tzinfo=None)
    clock.observe(naive, naive + timedelta(seconds=1), T0 + timedelta(seconds=30.5))
    offset = clock.offset()
    assert offset is not None and 29.5 <= offset <= 30.5
    assert clock.to_service(T0).tzinfo is not None

"""Settling windows on Redis: several machines hold a call's slot until its answer, as one process does."""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis

from tests.connectors.test_limiter_settling import overlapping
from videoferry.connectors.limiter import DEFAULT_MINUTE_MARGIN, DEFAULT_SECOND_MARGIN, ApiRateLimiter
from videoferry.connectors.limiter_backends import RedisWindows
from videoferry.connectors.limiter_windows import Window


def windows_on(redis_url: str, key: str, windows: list[Window], flight_limit: float = 100.0) -> RedisWindows:
    """A RedisWindows of its own connection (one per "machine")."""
    return RedisWindows(redis.Redis.from_url(redis_url), key, windows, flight_limit=flight_limit)


def test_a_call_in_flight_holds_its_slot_until_its_answer_on_every_machine(redis_url: str) -> None:
    a = windows_on(redis_url, "test:flight", [Window(2, 0.2)])
    b = windows_on(redis_url, "test:flight", [Window(2, 0.2)])
    first = a.admit(settled=False, block=False)
    second = b.admit(settled=False, block=False)
    assert first and second and first != second
    started = time.monotonic()
    while time.monotonic() - started < 0.5:  # long past the 0.2 s window: both still in flight
        assert a.admit(settled=True, block=False) is None
        assert b.room_in() > 0.2
    assert a.used() == 2
    b.settle(first)  # another machine's entry, settled: it counts from now, a whole window
    assert 0.1 < a.room_in() <= 0.2
    assert a.used() == 2  # reading took nothing
    assert a.admit(settled=True, block=True)  # waits the window out, then goes
    assert b.used() == 2  # the settled one has left its window; the one in flight and the new one


def test_an_entry_nobody_settles_is_released_after_the_flight_limit(redis_url: str) -> None:
    a = windows_on(redis_url, "test:dead", [Window(1, 0.2)], flight_limit=0.3)
    assert a.admit(settled=False, block=False)  # its machine dies mid-call
    assert a.admit(settled=True, block=False) is None
    assert 0.3 < a.room_in() <= 0.5  # counted as settled at admission + 0.3, then a 0.2 s window
    assert a.admit(settled=True, block=True)


def test_two_machines_never_let_a_window_hold_more_than_the_limit(redis_url: str) -> None:
    machines = [ApiRateLimiter.redis(redis_url, "tok-overlap", per_second=4, per_minute=1000) for _ in (1, 2)]
    margins = (machines[0].second_margin, machines[0].minute_margin)
    assert margins == (DEFAULT_SECOND_MARGIN, DEFAULT_MINUTE_MARGIN)  # no jitter to cover: slots are held
    flights: list[tuple[float, float]] = []
    lock = threading.Lock()

    def calls(limiter: ApiRateLimiter, seed: int) -> None:
        draw = random.Random(seed)
        for _ in range(6):
            with limiter.admitted():
                began = time.time()
                time.sleep(draw.uniform(0.0, 0.15))  # the request's flight (the service counts it in there)
                ended = time.time()
            with lock:
                flights.append((began, ended))

    threads = [
        threading.Thread(target=calls, args=(m, n * 2 + k)) for n, m in enumerate(machines) for k in (0, 1)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for m in machines:
            m.close()
    assert len(flights) == 24
    assert overlapping(flights, 1.0) <= 4


def test_the_redis_budget_counts_calls_in_flight(redis_url: str) -> None:
    with ApiRateLimiter.redis(redis_url, "tok-budget", per_second=10, per_minute=30) as limiter:
        with limiter.admitted():
            assert limiter.budget() == 29
            with limiter.admitted():
                assert limiter.budget() == 28
        assert limiter.budget() == 28  # settled: still inside the minute
        with pytest.raises(RuntimeError), limiter.admitted():
            raise RuntimeError("the request failed")  # an error settles the slot too
        assert limiter.budget() == 27

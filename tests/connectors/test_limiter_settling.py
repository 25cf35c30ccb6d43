"""Settling windows: a call holds its slot until its answer, then counts from then."""

from __future__ import annotations

import inspect
import multiprocessing
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from tests.connectors.test_limiter import max_in_window
from tests.fixtures.line_interrupt import each_line_interrupted
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import (
    DEFAULT_MINUTE_MARGIN,
    DEFAULT_SECOND_MARGIN,
    ApiRateLimiter,
    rate_limiter,
)
from videoferry.connectors.limiter_windows import (
    MemoryWindows,
    SQLiteWindows,
    Window,
    Windows,
    settling_windows,
)
from videoferry.core.transaction import immediate
from videoferry.emulator.control import EmulatorControl, Workspace

#: What a window-test's windows are made of: (windows, flight limit, clock) -> Windows.
MakeWindows = Callable[[list[Window], float, Callable[[], float]], Windows]


class FakeClock:
    """A clock the test moves by hand (epoch seconds)."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def make_windows(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeWindows]:
    made: list[Windows] = []

    def make(windows: list[Window], flight_limit: float, clock: Callable[[], float]) -> Windows:
        if request.param == "memory":
            store: Windows = MemoryWindows(windows, flight_limit=flight_limit, clock=clock)
        else:
            store = SQLiteWindows(
                tmp_path / "limiter.db", "key", windows, flight_limit=flight_limit, clock=clock
            )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def test_in_flight_entries_count_whatever_their_age(make_windows: MakeWindows) -> None:
    clock = FakeClock()
    windows = make_windows([Window(2, 1.0)], 100.0, clock)
    first = windows.admit(settled=False, block=False)
    second = windows.admit(settled=False, block=False)
    assert first is not None and second is not None
    clock.now += 50.0  # long past the window, still in flight
    assert windows.admit(settled=False, block=False) is None
    assert windows.used() == 2
    windows.settle(first)  # answered at 1050: counts until 1051
    clock.now += 0.999
    assert windows.admit(settled=True, block=False) is None
    clock.now += 0.001  # settle + window: out of the window (the service's own boundary)
    assert windows.admit(settled=True, block=False) is not None
    assert windows.used() == 2  # the one still in flight and the one just admitted


def test_an_entry_nobody_settles_is_released_after_the_flight_limit(make_windows: MakeWindows) -> None:
    clock = FakeClock()
    windows = make_windows([Window(1, 1.0), Window(2, 60.0)], 10.0, clock)
    assert windows.admit(settled=False, block=False) is not None  # its process dies mid-call
    clock.now += 10.999  # counted as settled at admission + 10: still inside the 1 s window
    assert windows.admit(settled=True, block=False) is None
    clock.now += 0.001
    assert windows.admit(settled=True, block=False) is not None
    # The minute window still counts the stale one (settled at +10) and the new one: full.
    clock.now += 1.0
    assert windows.admit(settled=True, block=False) is None
    clock.now += 60.0
    assert windows.admit(settled=True, block=False) is not None


def test_settled_entries_leave_each_window_after_its_length(make_windows: MakeWindows) -> None:
    clock = FakeClock()
    windows = make_windows([Window(2, 1.0), Window(3, 60.0)], 100.0, clock)
    assert windows.admit(settled=True, block=False) is not None
    assert windows.admit(settled=True, block=False) is not None
    assert windows.admit(settled=True, block=False) is None  # the second window is full
    clock.now += 1.0
    assert windows.admit(settled=True, block=False) is not None
    clock.now += 1.0
    assert windows.admit(settled=True, block=False) is None  # three in the minute
    assert windows.used() == 3
    clock.now += 58.0
    assert windows.used() == 1 and windows.admit(settled=True, block=False) is not None


def test_room_in_reads_when_a_call_could_go_and_takes_nothing(make_windows: MakeWindows) -> None:
    clock = FakeClock()
    windows = make_windows([Window(2, 1.0), Window(3, 60.0)], 100.0, clock)
    assert windows.room_in() == 0
    first = windows.admit(settled=False, block=False)
    second = windows.admit(settled=False, block=False)
    assert first is not None and second is not None
    assert windows.room_in() > 60  # the second's window is full of calls in flight: no time is known
    clock.now += 0.25
    windows.settle(first)
    assert windows.room_in() == pytest.approx(1.0)  # the settled one leaves it a whole second later
    assert windows.used() == 2  # reading took nothing
    clock.now += 1.0
    assert windows.room_in() == 0 and windows.admit(settled=True, block=False) is not None


def test_a_blocked_caller_waits_for_the_settle_then_a_whole_window(make_windows: MakeWindows) -> None:
    windows = make_windows([Window(1, 0.3)], 100.0, time.time)
    entry = windows.admit(settled=False, block=False)
    assert entry is not None
    admitted: list[float] = []
    waiter = threading.Thread(
        target=lambda: admitted.append(time.time()) if windows.admit(settled=True, block=True) else None
    )
    waiter.start()
    before_settle = time.time()
    windows.settle(entry)
    waiter.join(timeout=10)
    assert not waiter.is_alive() and len(admitted) == 1
    assert admitted[0] >= before_settle + 0.3


def test_a_ctrl_c_at_any_line_of_an_admission_leaves_no_transaction_open(tmp_path: Path) -> None:
    """Wherever a Ctrl-C's KeyboardInterrupt lands in an admission's transaction, none is left open: the
    next admission and settle go through (an open one made the next BEGIN fail)."""
    code = immediate.__wrapped__.__code__  # type: ignore[attr-defined]
    windows = SQLiteWindows(tmp_path / "limiter.db", "key", [Window(1000, 60.0)], clock=FakeClock())

    def next_admission_goes_through(_: int) -> None:
        entry = windows.admit(settled=False, block=False)
        assert entry is not None
        windows.settle(entry)

    try:
        landed = each_line_interrupted(
            code, lambda _: windows.admit(settled=True, block=False), next_admission_goes_through
        )
        assert landed >= 3  # BEGIN's line, the yield and the COMMIT at least
    finally:
        windows.close()


def test_margins_are_small_for_settling_windows_on_every_backend() -> None:
    assert DEFAULT_SECOND_MARGIN <= 0.005 and DEFAULT_MINUTE_MARGIN <= 0.05
    assert [w.seconds for w in settling_windows(10, 300, 0.005, 0.03)] == [1.005, 60.03]
    limiter = ApiRateLimiter.memory()
    assert (limiter.second_margin, limiter.minute_margin) == (DEFAULT_SECOND_MARGIN, DEFAULT_MINUTE_MARGIN)
    assert rate_limiter("margins-test").second_margin == DEFAULT_SECOND_MARGIN
    redis_defaults = inspect.signature(ApiRateLimiter.redis).parameters
    assert redis_defaults["second_margin"].default == DEFAULT_SECOND_MARGIN
    assert redis_defaults["minute_margin"].default == DEFAULT_MINUTE_MARGIN


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_budget_counts_calls_in_flight(backend: str, tmp_path: Path) -> None:
    if backend == "memory":
        limiter = ApiRateLimiter.memory(per_second=10, per_minute=30)
    else:
        limiter = ApiRateLimiter.sqlite(tmp_path / "b.db", "budget", per_second=10, per_minute=30)
    with limiter:
        with limiter.admitted():
            assert limiter.budget() == 29
            with limiter.admitted():
                assert limiter.budget() == 28
        assert limiter.budget() == 28  # settled: still inside the minute
        assert limiter.stats.acquired == 2
        with pytest.raises(RuntimeError), limiter.admitted():
            raise RuntimeError("the request failed")  # an error settles the slot too
        assert limiter.budget() == 27


def overlapping(flights: list[tuple[float, float]], window: float) -> int:
    """Most calls a service could count in one window, whenever in its flight it counts each call.

    A call (start, end) can be counted anywhere in [start, end]; a window (t - window, t] can hold every
    call that started by t and ended after t - window.
    """
    return max(sum(1 for start, end in flights if start <= t and end > t - window) for t, _ in flights)


def _settling_worker(
    path: str,
    each: int,
    seed: int,
    start: Barrier,
    queue: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    limiter = ApiRateLimiter.sqlite(path, "tok", per_second=4, per_minute=1000)
    draw = random.Random(seed)
    start.wait(timeout=60)
    flights = []
    for _ in range(each):
        with limiter.admitted():
            began = time.time()
            time.sleep(draw.uniform(0.0, 0.15))  # the request's flight (the service counts it in there)
            flights.append((began, time.time()))
    limiter.close()
    queue.put(flights)


def test_two_processes_never_let_a_window_hold_more_than_the_limit(tmp_path: Path) -> None:
    path = str(tmp_path / "limiter.db")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=_settling_worker, args=(path, 8, n, start, queue)) for n in (1, 2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=90) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    flights = [f for out in results for f in out]
    assert len(flights) == 16
    # The processes really overlapped: each started calling before the other had finished.
    assert max(out[0][0] for out in results) < min(out[-1][1] for out in results)
    assert overlapping(flights, 1.0) <= 4


def _dies_mid_call(path: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    limiter = ApiRateLimiter.sqlite(path, "tok", per_second=1, per_minute=1000, flight_limit=2.0)
    before = time.time()
    with limiter.admitted():
        queue.put(before)
        queue.close()
        queue.join_thread()
        os._exit(0)  # killed mid-call: nobody settles the entry


def test_a_call_of_a_killed_process_counts_until_the_flight_limit(tmp_path: Path) -> None:
    path = str(tmp_path / "limiter.db")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_dies_mid_call, args=(path, queue))
    child.start()
    admitted_after = queue.get(timeout=60)
    child.join(timeout=30)
    limiter = ApiRateLimiter.sqlite(path, "tok", per_second=1, per_minute=1000, flight_limit=2.0)
    try:
        took = limiter.try_acquire()
        if time.time() < admitted_after + 2.0:  # asked before the flight limit could have passed
            assert not took
        deadline = time.monotonic() + 30
        while not took and time.monotonic() < deadline:
            time.sleep(0.05)
            took = limiter.try_acquire()
        assert took
        # Released no sooner than admission + flight limit + the 1 s window.
        assert time.time() >= admitted_after + 2.0 + 1.0
    finally:
        limiter.close()


# -- against the emulator ------------------------------------------------------------------------------


def _api_rows(control: EmulatorControl, ws: Workspace) -> list[dict]:
    return [r for r in control.requests(ws.workspace_id) if r["path"] == "/v1/videos"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_no_429_at_the_small_margins_with_many_threads(
    backend: str, emu: Workspace, emu_control: EmulatorControl, tmp_path: Path
) -> None:
    # The workspace's 10/s, 300/min; with SQLite two limiter objects on one file (two processes, say).
    if backend == "memory":
        limiters = [ApiRateLimiter.memory()]
    else:
        limiters = [ApiRateLimiter.sqlite(tmp_path / "limiter.db", emu.token) for _ in range(2)]
    assert all(lim.second_margin == DEFAULT_SECOND_MARGIN for lim in limiters)
    clients = [VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=lim) for lim in limiters]

    def worker(client: VideoClient) -> None:
        for _ in range(4):
            client.videos.list(per_page=1)

    threads = [threading.Thread(target=worker, args=(c,)) for c in clients for _ in range(16 // len(clients))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        for c in clients:
            c.close()
        for lim in limiters:
            lim.close()
    rows = _api_rows(emu_control, emu)
    assert len(rows) == 64
    assert [r["status"] for r in rows if r["status"] != 200] == []  # no 429
    assert max_in_window([r["time"] for r in rows], 1.0) <= 10


def test_wait_for_room_returns_when_a_call_could_go_and_takes_no_slot() -> None:
    with ApiRateLimiter.memory(per_second=3, per_minute=100) as limiter:
        while limiter.try_acquire():
            pass  # the second's window is full
        budget = limiter.budget()
        limiter.wait_for_room()
        assert limiter.budget() == budget  # waited, took nothing
        assert limiter.try_acquire()  # and a call may go now

"""The shared API rate limiter: exact windows across threads, processes (SQLite), machines (Redis); pause."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from videoferry.connectors.limiter import ApiRateLimiter, rate_limiter
from videoferry.connectors.limiter_windows import settling_windows


def max_in_window(stamps: list[float], window: float) -> int:
    """Most stamps inside any half-open window [t, t + window) (how the server counts arrivals)."""
    stamps = sorted(stamps)
    best = 0
    j = 0
    for i, start in enumerate(stamps):
        while j < len(stamps) and stamps[j] < start + window:
            j += 1
        best = max(best, j - i)
    return best


def hammer(limiters: list[ApiRateLimiter], threads_per_limiter: int, each: int) -> list[float]:
    stamps: list[float] = []
    lock = threading.Lock()

    def worker(limiter: ApiRateLimiter) -> None:
        for _ in range(each):
            limiter.acquire()
            now = time.time()
            with lock:
                stamps.append(now)

    workers = [
        threading.Thread(target=worker, args=(lim,)) for lim in limiters for _ in range(threads_per_limiter)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    return stamps


def test_windows_carry_the_margins() -> None:
    second, minute = settling_windows(10, 300, 0.1, 1.0)
    assert (second.limit, second.seconds) == (10, 1.1)
    assert (minute.limit, minute.seconds) == (300, 61.0)
    with pytest.raises(ValueError):
        settling_windows(0, 300, 0.005, 0.03)
    with pytest.raises(ValueError):
        settling_windows(10, 300, -0.1, 0.03)


def test_threads_share_the_per_second_window() -> None:
    with ApiRateLimiter.memory(10, 1000, second_margin=0.2) as limiter:
        stamps = hammer([limiter], threads_per_limiter=8, each=3)
    assert len(stamps) == 24
    assert max_in_window(stamps, 1.0) <= 10
    assert limiter.stats.acquired == 24


def test_per_minute_window_refuses_once_full() -> None:
    with ApiRateLimiter.memory(1000, 5) as limiter:
        assert all(limiter.try_acquire() for _ in range(5))
        assert not limiter.try_acquire()


def test_pause_holds_every_caller() -> None:
    with ApiRateLimiter.memory(100, 1000, pause_seconds=0.4) as limiter:
        limiter.pause()
        until = time.time() + limiter.pause_remaining()
        assert limiter.pause_remaining() > 0
        assert not limiter.try_acquire()
        stamps = hammer([limiter], threads_per_limiter=3, each=1)
        assert min(stamps) >= until - 0.01
        assert limiter.stats.pauses == 1


def test_rate_limiter_is_one_per_token() -> None:
    a = rate_limiter("token-a-test", per_second=7, per_minute=70)
    assert rate_limiter("token-a-test", per_second=7, per_minute=70) is a
    assert rate_limiter("token-b-test", per_second=7, per_minute=70) is not a
    assert "token-a" not in repr(a)


def test_limiter_urls() -> None:
    assert rate_limiter("k").backend == "memory"
    assert rate_limiter("k", url="memory") is rate_limiter("k")
    with pytest.raises(ValueError):
        rate_limiter("k", url="mysql://x")
    with pytest.raises(ValueError):
        rate_limiter("k", url="sqlite://")


def _sqlite_worker(path: str, each: int, start: Barrier, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    limiter = ApiRateLimiter.sqlite(path, "tok", per_second=5, per_minute=1000, second_margin=0.2)
    start.wait(timeout=60)  # both processes begin calling at the same moment (spawn start-up is slow)
    began = time.time()
    out = []
    for _ in range(each):
        limiter.acquire()
        out.append(time.time())
    limiter.close()
    queue.put((began, time.time(), out))


def test_sqlite_backend_shares_the_window_between_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "limiter.db")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = ctx.Barrier(2)
    # 6 calls each at 5 per window: neither process can finish inside the first window alone, so each one's
    # calls span at least one full window, and both are contending for the same windows.
    procs = [ctx.Process(target=_sqlite_worker, args=(path, 6, start, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    stamps = [t for _began, _ended, out in results for t in out]
    assert len(stamps) == 12
    # The processes really overlapped: each started calling before the other had finished.
    assert max(began for began, _e, _o in results) < min(ended for _b, ended, _o in results)
    assert max_in_window(stamps, 1.0) <= 5


def test_sqlite_pause_is_seen_by_another_limiter(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'limiter.db'}"
    a = rate_limiter("tok", url=url, per_second=100, per_minute=1000, pause_seconds=30)
    b = rate_limiter("tok", url=url, per_second=100, per_minute=1000)
    other = rate_limiter("another-token", url=url, per_second=100, per_minute=1000)
    try:
        assert b.try_acquire()
        a.pause()
        assert b.pause_remaining() > 20
        assert not b.try_acquire()
        assert other.try_acquire()  # a different token has its own budget and pause
    finally:
        for lim in (a, b, other):
            lim.close()


def test_redis_backend_shares_window_and_pause(redis_url: str) -> None:
    # Two limiter objects with their own connections stand for two machines.
    a = ApiRateLimiter.redis(
        redis_url, "tok", per_second=5, per_minute=1000, second_margin=0.2, pause_seconds=0.3
    )
    b = ApiRateLimiter.redis(redis_url, "tok", per_second=5, per_minute=1000, second_margin=0.2)
    try:
        assert a.backend == "redis"
        stamps = hammer([a, b], threads_per_limiter=2, each=3)
        assert len(stamps) == 12
        assert max_in_window(stamps, 1.0) <= 5
        a.pause()
        assert b.pause_remaining() > 0
        assert not b.try_acquire()
    finally:
        a.close()
        b.close()


def test_sqlite_try_acquire_waits_out_a_held_lock(tmp_path: Path) -> None:
    path = tmp_path / "limiter.db"
    taker = ApiRateLimiter.sqlite(path, "tok", per_second=100, per_minute=1000)
    # Another process in the middle of an admission: it holds the file's write lock for a moment.
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    timer.start()
    try:
        assert taker.try_acquire()  # free windows: a held lock is waited for, not taken for "full"
        assert not holder.in_transaction  # it did wait for the holder to let go
    finally:
        timer.join(timeout=5)
        holder.close()
        taker.close()


def test_windows_that_cannot_bind_are_dropped() -> None:
    assert [w.limit for w in settling_windows(5, 1000, 0.005, 0.03)] == [5]
    assert [w.limit for w in settling_windows(10, 5, 0.005, 0.03)] == [5]


def test_budget_is_what_the_minute_window_still_admits(tmp_path: Path) -> None:
    for limiter in (
        ApiRateLimiter.memory(per_second=10, per_minute=30),
        ApiRateLimiter.sqlite(tmp_path / "budget.sqlite", "budget-test", per_second=10, per_minute=30),
    ):
        with limiter:
            assert limiter.budget() == 30
            for _ in range(7):
                limiter.acquire()
            assert limiter.budget() == 23  # the second window's room (3) does not enter it
            limiter.pause(0.5)
            assert limiter.budget() == 0  # paused: nothing goes now

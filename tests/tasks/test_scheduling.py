"""The rounds' loop: a nudge (work ended, a claim came) or a stop begins the next round before the tick."""

from __future__ import annotations

import concurrent.futures
import threading

from videoferry.tasks.scheduling import Schedule, when_done
from videoferry.tasks.stop import Stop

#: A tick no test waits out: a round that comes sooner came from a nudge or a stop.
LONG_TICK = 3600.0
#: The bound on each wait of these tests (a failure is a hang cut short, not a slow machine).
BOUND = 60.0


class Rounds(Schedule):
    """A schedule that counts its rounds, says when one began, and ends after `rounds` of them."""

    def __init__(self, stop: Stop, rounds: int) -> None:
        super().__init__(stop, tick=LONG_TICK)
        self.rounds = 0
        self.wanted = rounds
        self.began = threading.Semaphore(0)

    def collect(self) -> None:
        self.rounds += 1
        self.began.release()

    def busy(self) -> bool:
        return False

    def settle_leftovers(self) -> None:
        pass

    def start_what_can_start(self) -> None:
        pass

    def poll_what_waits(self) -> None:
        pass

    def finish_what_is_done(self) -> None:
        pass

    def stop_on_bound(self) -> bool | None:
        return True if self.rounds >= self.wanted else None


def _run_in_thread(schedule: Schedule) -> tuple[threading.Thread, list[bool]]:
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(schedule.run()), daemon=True)
    thread.start()
    return thread, result


def test_a_nudge_begins_the_next_round_before_the_tick() -> None:
    schedule = Rounds(Stop(), rounds=3)
    thread, result = _run_in_thread(schedule)
    for _ in range(2):
        assert schedule.began.acquire(timeout=BOUND)
        schedule.nudge()
    thread.join(BOUND)
    assert not thread.is_alive(), "the rounds waited for the tick after a nudge"
    assert (result, schedule.rounds) == ([True], 3)


def test_a_stop_ends_the_wait_between_rounds() -> None:
    stop = Stop()
    schedule = Rounds(stop, rounds=10)
    thread, result = _run_in_thread(schedule)
    assert schedule.began.acquire(timeout=BOUND)
    stop(KeyboardInterrupt())
    thread.join(BOUND)
    assert not thread.is_alive(), "the stop did not end the wait"
    assert result == [False]


def test_an_event_registered_after_the_stop_is_set_at_once() -> None:
    stop = Stop()
    stop(KeyboardInterrupt())
    late = threading.Event()
    stop.wakes(late)
    assert late.is_set()


def test_when_done_calls_back_once_the_future_ends() -> None:
    called = threading.Event()
    release = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(release.wait, BOUND)
        when_done(future, called.set)
        assert not called.is_set()
        release.set()
        assert called.wait(BOUND)


def test_when_done_leaves_a_handle_that_cannot_tell_to_the_tick() -> None:
    class Plain:
        def done(self) -> bool:
            return True

        def result(self) -> None:
            return None

    called: list[int] = []
    when_done(Plain(), lambda: called.append(1))
    assert called == []

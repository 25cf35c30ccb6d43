"""A lost create answer looked up too early is settled as soon as its settle time has passed (issue 49: the
faulted run's idle time), ahead of the batches not started yet, not in a round after every batch ended; and
looked up once before it while the calls can spare a listing, which can find its video ("there") but never
says "not there"."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.fixtures.emulator import fast_polls
from tests.tasks.migrate_runs import planned_run, run_with_settle
from videoferry.emulator.control import EmulatorControl
from videoferry.state.machine import FINISHED
from videoferry.tasks.migrate import parked
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.schedule import MAX_BATCH

#: The settle time of this test (the real one is 15 s). The first batch's MAX_BATCH inits take at least
#: (MAX_BATCH - 1) / PER_SECOND = 4.8 s under the limiter: the lost answer's settle time passes inside it.
SETTLE = 1.0
PER_SECOND = 5


@pytest.fixture()
def ctx(tmp_path: Path, emu_control: EmulatorControl, sample_clip: Path) -> Iterator[MigrateContext]:
    """A run of MAX_BATCH + 1 planned items of one clip (one transfer: a batch of MAX_BATCH, then one of 1);
    its ledger at tmp_path/l.db. The first init's answer is lost after the service made the video; every
    other call is answered."""
    fault: dict[str, object] = {"kind": "drop_after_commit"}
    with _faulted_run(tmp_path, emu_control, sample_clip, MAX_BATCH + 1, fault) as context:
        yield context


def _timed_journal(db: Path) -> list[tuple[float, str, str]]:
    """(our clock's epoch seconds, key, message) of every ledger event, in the order written."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT time, key, message FROM events ORDER BY event_id").fetchall()
    return [(datetime.fromisoformat(t).timestamp(), str(k), str(msg or "")) for t, k, msg in rows]


@contextlib.contextmanager
def _faulted_run(
    tmp_path: Path,
    emu_control: EmulatorControl,
    clip: Path,
    count: int,
    fault: dict[str, object],
    lag: float = 0.0,
) -> Iterator[MigrateContext]:
    """`count` items of one clip planned (ledger at tmp_path/l.db), the first init meeting `fault`; with lag,
    the service lists a new video only `lag` seconds after its create."""
    ws = fast_polls(emu_control)
    if lag:
        emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=lag)
    context = planned_run(tmp_path / "l.db", ws, clip, count, per_second=PER_SECOND)
    emu_control.set_faults(ws, [{**fault, "path": "^/v2/init$", "times": 1}], seed=1)
    try:
        yield context
    finally:
        context.client.close()
        context.ledger.close()
        emu_control.clear_faults(ws)


def _tail_run(
    tmp_path: Path, emu_control: EmulatorControl, clip: Path, fault: dict[str, object], lag: float = 0.0
) -> contextlib.AbstractContextManager[MigrateContext]:
    """Three items in one batch (the run's tail at once: nothing is left to start), the first init meeting
    `fault`."""
    return _faulted_run(tmp_path, emu_control, clip, 3, fault, lag)


#: The settle time of the early-look tests: long against the early look (parked.EARLY_LOOK_SECONDS).
LONG_SETTLE = 20.0


@pytest.mark.parametrize("lag", [0.0, 3.0], ids=["listed-at-once", "list-lag-3s"])
def test_a_lost_answer_near_the_end_is_found_by_an_early_look_before_its_settle_time(
    tmp_path: Path,
    emu_control: EmulatorControl,
    sample_clip: Path,
    monkeypatch: pytest.MonkeyPatch,
    lag: float,
) -> None:
    with _tail_run(tmp_path, emu_control, sample_clip, {"kind": "drop_after_commit"}, lag) as run:
        assert run_with_settle(run, monkeypatch, LONG_SETTLE)
        journal = _timed_journal(tmp_path / "l.db")
        lost = next(t for t, k, msg in journal if k == "k00" and msg.startswith("reconcile postponed"))
        adopted = next(t for t, k, msg in journal if k == "k00" and "adopted" in msg)
        # Found by the one early listing, not after the settle time: "there" needs no settle time.
        assert adopted - lost < LONG_SETTLE, journal
        listed = run.listings.listings
        assert listed == 1
        items = run.ledger.items()
        assert {i.state for i in items} == {FINISHED}
        assert len({i.video_id for i in items}) == len(items)


def test_an_early_look_that_finds_nothing_waits_for_the_settle_time_before_creating_again(
    tmp_path: Path, emu_control: EmulatorControl, sample_clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A 503 before anything happened: the client cannot know that, so the answer counts as lost.
    with _tail_run(tmp_path, emu_control, sample_clip, {"kind": "error", "status": 503}) as run:
        assert run_with_settle(run, monkeypatch, LONG_SETTLE)
        journal = _timed_journal(tmp_path / "l.db")
        lost = next(t for t, k, msg in journal if k == "k00" and msg.startswith("reconcile postponed"))
        again = next(t for t, k, msg in journal if k == "k00" and msg.startswith("reconcile: no matching"))
        assert again - lost >= LONG_SETTLE - 1.0, journal  # the early look's empty listing was not believed
        listed = run.listings.listings
        assert listed == 2  # the early look's, then the one after the settle time
        items = run.ledger.items()
        assert {i.state for i in items} == {FINISHED}
        assert len({i.video_id for i in items}) == len(items)


def _journal(db: Path) -> list[tuple[str, str, str]]:
    """(key, to_state, message) of every ledger event, in the order written."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT key, to_state, message FROM events ORDER BY event_id").fetchall()
    return [(str(k), str(to), str(msg or "")) for k, to, msg in rows]


def test_a_lost_answer_is_settled_once_its_settle_time_passed_ahead_of_the_next_batch(
    tmp_path: Path, ctx: MigrateContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    ended = run_with_settle(ctx, monkeypatch, SETTLE)
    assert ended
    journal = _journal(tmp_path / "l.db")
    last = f"k{MAX_BATCH:02d}"  # the one item of the second batch
    adopted = next(i for i, (k, to, msg) in enumerate(journal) if k == "k00" and "adopted" in msg)
    created = next(i for i, (k, to, msg) in enumerate(journal) if k == last and msg == "create intent")
    # The lost answer's video is found (by one listing after its settle time) before the next batch begins:
    # before the change it waited for a round after every batch had ended.
    assert adopted < created, [e for e in journal if e[0] in ("k00", last)]
    items = ctx.ledger.items()
    assert {i.state for i in items} == {FINISHED}
    assert len({i.video_id for i in items}) == len(items)  # one video per item, none made twice


def test_parked_items_are_due_no_earlier_than_asked_on_the_grid_and_retried_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.3]
    monkeypatch.setattr(parked.time, "monotonic", lambda: clock[0])
    shelf = parked.Parked()
    shelf.park("a", 1.0)  # due at 101.3, on the grid: 102
    assert shelf.retry("b")  # due at 100.3 + RETRY_PAUSE, on the grid
    clock[0] = 101.9
    assert shelf.take_due() == [] and shelf.keys() == {"a", "b"}
    clock[0] = 102.0
    assert shelf.take_due() == ["a"]
    assert shelf.take(["a", "b"]) == ["b"] and not shelf
    assert [shelf.retry("b") for _ in range(parked.RETRIES)] == [True] * (parked.RETRIES - 1) + [False]


def test_an_early_look_is_taken_once_per_loss_after_its_age_and_only_when_the_calls_can_spare_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]
    monkeypatch.setattr(parked.time, "monotonic", lambda: clock[0])
    shelf = parked.Parked()
    shelf.park("a", 15.0)
    asked = []

    def room() -> bool:
        asked.append(clock[0])
        return True

    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, room) == [] and asked == []  # too young: not asked
    clock[0] += parked.EARLY_LOOK_SECONDS
    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, lambda: False) == []  # no room: stays parked
    assert shelf.keys() == {"a"}
    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, room) == ["a"] and not shelf
    assert shelf.looks_early("a") and not shelf.looks_early("a")  # one early look
    shelf.park("a", 13.0)  # back until the same settle time: no second early look
    clock[0] += parked.EARLY_LOOK_SECONDS
    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, room) == []
    clock[0] += 14.0
    assert shelf.take_due() == ["a"]
    shelf.park("a", 15.0)  # lost again (a later create): an early look of its own
    clock[0] += parked.EARLY_LOOK_SECONDS
    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, room) == ["a"]
    shelf.park("b", 1.0)  # due within a grid step: not worth an early look
    clock[0] += parked.EARLY_LOOK_SECONDS - 0.5
    assert shelf.take_early(parked.EARLY_LOOK_SECONDS, room) == []

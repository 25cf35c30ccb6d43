"""A lost create answer looked up too early is settled as soon as its settle time has passed (issue 49: the
faulted run's idle time), ahead of the batches not started yet, not in a round after every batch ended."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
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
    its ledger at tmp_path/l.db."""
    ws = fast_polls(emu_control)
    context = planned_run(tmp_path / "l.db", ws, sample_clip, MAX_BATCH + 1, per_second=PER_SECOND)
    # The first init's answer is lost after the service made the video; every other call is answered.
    emu_control.set_faults(ws, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1}], seed=1)
    try:
        yield context
    finally:
        context.client.close()
        context.ledger.close()
        emu_control.clear_faults(ws)


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

"""The settle time of a lost answer counts from when the answer was lost, not only from the intent: a create
that waited for admission or was answered slowly can be made long after its intent was written, and a
lagging list must still have its settle time to show it (issue 49's read of the faulted run)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.fixtures.emulator import fast_polls
from tests.tasks.migrate_runs import planned_run, run_with_settle
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.machine import FINISHED
from videoferry.tasks import lookup
from videoferry.tasks.migrate.context import MigrateContext

#: The settle time of this test (the real one is 15 s): longer than the list's lag, shorter than the time
#: the service takes to answer the create (LATENCY_MS), so the intent is past its settle time when the
#: answer is lost, while the video is not listed yet.
SETTLE = 1.5
LIST_LAG = 1.0
LATENCY_MS = 2500


@pytest.fixture()
def run(
    tmp_path: Path, emu_control: EmulatorControl, sample_clip: Path
) -> Iterator[tuple[MigrateContext, Workspace]]:
    """Two planned items of one clip; the first init is answered after LATENCY_MS (the video made before
    the answer) and its answer lost; lists show a video LIST_LAG s after its create."""
    ws = fast_polls(emu_control)
    emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=LIST_LAG)
    context = planned_run(tmp_path / "l.db", ws, sample_clip, 2, per_second=10)
    emu_control.set_faults(
        ws,
        [
            {"kind": "latency", "path": "^/v2/init$", "ms": LATENCY_MS, "times": 1},
            {"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1},
        ],
        seed=1,
    )
    try:
        yield context, ws
    finally:
        context.client.close()
        context.ledger.close()
        emu_control.clear_faults(ws)


def test_a_slow_lost_create_waits_its_settle_time_from_the_loss_and_is_found_not_made_again(
    run: tuple[MigrateContext, Workspace], emu_control: EmulatorControl, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, ws = run
    ended = run_with_settle(ctx, monkeypatch, SETTLE)
    assert ended
    titles = sorted(v["title"] for v in emu_control.videos(ws) if v.get("deleted_at") is None)
    assert titles == ["clip 0", "clip 1"], titles  # the slow create's video found, not made a second time
    items = ctx.ledger.items()
    assert {i.state for i in items} == {FINISHED}


def test_the_settle_time_counts_from_the_first_look_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", 15.0)
    for age in (60, 5):  # a minute-old intent (a slow call, a crashed run's) or a young one: 15 s to go
        intent_at = datetime.now(UTC) - timedelta(seconds=age)
        first = lookup.settle_remaining_at(intent_at, f"k{age}")
        assert 14.0 < first <= 15.0
        assert lookup.settle_remaining_at(intent_at, f"k{age}") <= first  # the first look stays the start
    ahead = datetime.now(UTC) + timedelta(seconds=3)  # an intent our clock puts ahead (it stepped back)
    assert lookup.settle_remaining_at(ahead, "k") > 15.0  # never before the intent
    assert lookup.settle_remaining_at(None, "k") == 0.0

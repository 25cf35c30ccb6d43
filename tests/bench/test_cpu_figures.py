"""cpu_per_item of several interleaved runs: medians per size, growth of the medians, the runs in the note."""

from __future__ import annotations

import pytest

from bench.cpu_per_item import ROUNDS_ENV, SIZES, Measured, figures, sizes


def _run(job: str, items: int, ms: float) -> Measured:
    return Measured(job, items, seconds=items / 100, cpu=ms * items / 1000, done=items)


def test_sizes_repeat_in_interleaved_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROUNDS_ENV, "2")
    assert sizes(quick=False) == SIZES + SIZES
    assert sizes(quick=True) == (20, 60)


def test_one_high_run_of_three_does_not_move_the_growth() -> None:
    runs = []
    for small, big in ((3.3, 3.2), (3.4, 3.9), (3.3, 3.3)):
        runs += [_run("migrate", 1000, small), _run("migrate", 20000, big)]
    got = {f.name: f for f in figures(runs)}
    assert got["cpu_per_item_migrate_20k"].value == pytest.approx(3.3)
    assert got["cpu_per_item_migrate_1k"].value == pytest.approx(3.3)
    assert got["cpu_per_item_growth_1k_to_20k"].value == pytest.approx(1.0)
    assert "min 3.20 / max 3.90" in got["cpu_per_item_migrate_20k"].note
    assert "round by round 0.97, 1.15, 1.00" in got["cpu_per_item_growth_1k_to_20k_migrate"].note


def test_the_larger_jobs_growth_is_the_target_figure() -> None:
    runs = [_run("migrate", 1000, 3.0), _run("migrate", 20000, 3.0)]
    runs += [_run("apply", 1000, 2.0), _run("apply", 20000, 2.6)]
    got = {f.name: f for f in figures(runs)}
    assert got["cpu_per_item_growth_1k_to_20k"].value == pytest.approx(1.3)
    assert "one run" in got["cpu_per_item_apply_20k"].note

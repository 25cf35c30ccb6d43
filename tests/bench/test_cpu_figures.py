"""cpu_per_item of several interleaved runs: medians per size, growth of the medians, the runs in the note."""

from __future__ import annotations

import pytest

from bench.cpu_per_item import LONG_ENV, ROUNDS_ENV, SIZES, SIZES_ENV, Measured, figures, sizes


def _run(job: str, items: int, ms: float) -> Measured:
    return Measured(job, items, seconds=items / 100, cpu=ms * items / 1000, done=items)


def test_sizes_repeat_in_interleaved_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROUNDS_ENV, "2")
    assert sizes(quick=False) == SIZES + SIZES
    assert sizes(quick=True) == (20, 40, 60)
    monkeypatch.setenv(SIZES_ENV, "1000,5000,25000")
    assert sizes(quick=False) == (1000, 5000, 25000) * 2


def test_one_high_run_of_three_does_not_move_the_growth() -> None:
    runs = []
    for small, big in ((3.3, 3.2), (3.4, 3.9), (3.3, 3.3)):
        runs += [_run("migrate", 1000, small), _run("migrate", 20000, big)]
    got = {f.name: f for f in figures(runs)}
    assert got["cpu_per_item_migrate_20k"].value == pytest.approx(3.3)
    assert got["cpu_per_item_migrate_1k"].value == pytest.approx(3.3)
    assert got["cpu_per_item_growth_1k_to_20k"].value == pytest.approx(1.0)
    assert "min 3.20 / max 3.90" in got["cpu_per_item_migrate_20k"].note
    # Each run's CPU stays in the note, in order, so an outlier can be told from the median it is hidden in.
    assert (
        "each run in order: user 64.0 s, system 0.0 s, wall 200.0 s; user 78.0 s"
        in got["cpu_per_item_migrate_20k"].note
    )
    assert "round by round 0.97, 1.15, 1.00" in got["cpu_per_item_growth_1k_to_20k_migrate"].note


def test_the_larger_jobs_growth_is_the_target_figure() -> None:
    runs = [_run("migrate", 1000, 3.0), _run("migrate", 20000, 3.0)]
    runs += [_run("apply", 1000, 2.0), _run("apply", 20000, 2.6)]
    got = {f.name: f for f in figures(runs)}
    assert got["cpu_per_item_growth_1k_to_20k"].value == pytest.approx(1.3)
    assert "one run" in got["cpu_per_item_apply_20k"].note


def test_the_slope_leaves_out_each_runs_fixed_cost() -> None:
    # A run costs 5 s of CPU whatever its size, then 2 ms per item to 20k and 2.4 ms per item beyond: per item
    # 20k -> 100k reads 1.15 (the fixed cost hides part of it), the slope 2.4 / 2.0 = 1.2.
    def cpu(items: int) -> float:
        return 5.0 + 0.002 * min(items, 20000) + 0.0024 * max(0, items - 20000)

    runs = []
    for items in (1000, 20000, 1000, 20000):
        runs += [
            Measured("migrate", items, 1.0, cpu(items), items),
            Measured("apply", items, 1.0, cpu(items) / 2, items),
        ]
    runs += [Measured("migrate", 100000, 1.0, cpu(100000), 100000)]
    runs += [Measured("apply", 100000, 1.0, cpu(100000) / 2, 100000)]
    got = {f.name: f for f in figures(runs)}
    assert got["cpu_slope_migrate_1k_to_20k"].value == pytest.approx(2.0)
    assert got["cpu_slope_migrate_20k_to_100k"].value == pytest.approx(2.4)
    assert got["cpu_slope_growth_20k_to_100k_migrate"].value == pytest.approx(1.2)
    assert got["cpu_slope_growth_20k_to_100k"].value == pytest.approx(1.2)
    assert got["cpu_slope_growth_20k_to_100k"].rounds == pytest.approx((1.2, 1.2))


def test_the_note_gives_the_median_of_the_runs_system_seconds() -> None:
    runs = [Measured("apply", 1000, 10.0, cpu=2.0, done=1000, system=s) for s in (0.25, 0.5, 1.75)]
    note = next(f.note for f in figures(runs) if f.name == "cpu_per_item_apply_1k")
    assert "median 2.0 s CPU (user + system, imports excluded; system 0.5 s)" in note


def test_the_long_size_ends_each_of_the_last_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROUNDS_ENV, "2")
    monkeypatch.setenv(LONG_ENV, "1")
    assert sizes(quick=False) == (1000, 20000, 1000, 20000, 100000)
    monkeypatch.setenv(LONG_ENV, "2")
    assert sizes(quick=False) == (1000, 20000, 100000, 1000, 20000, 100000)
    monkeypatch.setenv(LONG_ENV, "3")
    assert sizes(quick=False) == (1000, 20000, 100000, 1000, 20000, 100000, 100000)
    monkeypatch.setenv(LONG_ENV, "0")
    assert sizes(quick=False) == (1000, 20000, 1000, 20000)
    monkeypatch.setenv(LONG_ENV, "yes")
    with pytest.raises(ValueError, match="VIDEOFERRY_BENCH_CPU_100K='yes'"):
        sizes(quick=False)


def test_two_long_runs_pair_round_by_round() -> None:
    runs = []
    for big_ms in (2.0, 2.4):
        runs += [_run("apply", 1000, 2.0), _run("apply", 20000, 2.0), _run("apply", 100000, big_ms)]
    got = {f.name: f for f in figures(runs)}
    slopes = got["cpu_slope_apply_20k_to_100k"]
    assert [round(v, 3) for v in slopes.rounds] == [2.0, 2.5]


def test_the_note_gives_the_median_of_the_runs_full_collections() -> None:
    runs = [Measured("apply", 1000, 10.0, cpu=2.0, done=1000, full_gc=(n, n / 10)) for n in (3, 40, 7)]
    note = next(f.note for f in figures(runs) if f.name == "cpu_per_item_apply_1k")
    assert "full garbage collections 7 (0.70 s)" in note


def test_the_child_counts_the_collectors_passes_while_installed() -> None:
    import gc

    from bench.child import _Collections

    with _Collections() as collections:
        gc.collect()
        gc.collect(0)
    counted = collections.report()
    assert counted["passes"][2] >= 1 and counted["passes"][0] >= 1
    gc.collect()  # after it is removed: not counted
    assert collections.report() == counted and collections not in gc.callbacks

"""bench.history: every whole run a RESULTS.md held in git, once each, with its verdicts counted."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from bench.figures import Figure, with_rounds
from bench.history import read_run, summary, versions, whole_runs
from bench.results import section, write_results

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=_GIT_ENV, check=True, capture_output=True)


def _write(path: Path, measured: str, hour: int, plan: list[float], header: str = "") -> None:
    """A RESULTS.md as a run writes it (bench/results.py), with plan_100k_rows_seconds over its rounds."""
    figures = [with_rounds("plan_100k_rows_seconds", plan, "s"), Figure("rate_cap_429s", 0)]
    write_results(
        path,
        [section("plan", figures, [], 10.0, (0.1, 0.2), [], False)],
        "python -m bench --alone",
        Figure("calibration_cpu_loop_seconds", 0.08, "s"),
        datetime(2026, 12, 1, hour, 0, tzinfo=UTC),
        600.0,
        header=header,
        measured=measured,
    )


def test_each_whole_run_counts_once_and_samples_do_not(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    results = repo / "bench" / "RESULTS.md"
    results.parent.mkdir(parents=True)
    _git(repo, "init", "-q")
    steps = [
        ("aaaaaaa", 1, [1.5, 1.6, 1.7], ""),  # met
        ("bbbbbbb", 2, [2.9, 3.1, 3.2], ""),  # crosses the 3 s bound
        ("ccccccc", 3, [0.1, 0.1, 0.1], "A format sample: not figures to quote"),  # --quick: left out
        ("ddddddd", 4, [3.2, 3.3, 3.4], ""),  # missed
    ]
    for measured, hour, plan, header in steps:
        _write(results, measured, hour, plan, header)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", measured)
        if measured == "bbbbbbb":  # the same run's file committed again with a note below the marker
            results.write_text(results.read_text() + "\nA hand-written note.\n")
            _git(repo, "commit", "-q", "-am", "note")

    texts = versions(results, repo)
    assert len(texts) == 5
    runs = whole_runs(texts)
    assert [r.commit for r in runs] == ["aaaaaaa", "bbbbbbb", "ddddddd"]
    assert [r.targets["plan_100k_rows_seconds"].met for r in runs] == ["yes", "not resolved", "no"]
    assert runs[0].targets["rate_cap_429s"].met == "yes"  # "(one run)" dropped: the spread column says it

    table = summary(runs, each_run=True)
    row = next(line for line in table if line.startswith("| `plan_100k_rows_seconds`"))
    assert row == "| `plan_100k_rows_seconds` | <= 3 | 3 | 1.600 / 3.100 / 3.300 | 1 | 1 | 1 |"
    assert (
        "- `plan_100k_rows_seconds`: aaaaaaa 1.600 yes; bbbbbbb 3.100 not resolved; ddddddd 3.300 no" in table
    )


def test_a_file_not_written_whole_by_one_run_is_no_run() -> None:
    older = "# Benchmark results\n\n## plan\n\n- commit 06681c1, 2026-11-26 08:30 UTC, 5 s, load 0.98\n"
    assert read_run(older) is None

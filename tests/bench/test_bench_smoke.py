"""Every benchmark runs in --quick mode, prints its figures and keeps the invariants that hold at any size."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The figure names each benchmark prints in --quick mode (sizes are part of some names).
EXPECTED = {
    "help_time": ["help_wall_seconds"],
    "api_calls": ["api_calls_per_video_tus", "api_calls_per_video_url"],
    "rate_cap": ["rate_cap_share", "rate_cap_peak_second", "rate_cap_peak_minute", "rate_cap_429s"],
    "throughput": [
        "raw_single_request_throughput",
        "tus_throughput",
        "tus_connector_throughput",
        "tus_vs_raw_throughput",
    ],
    "memory": [
        "peak_rss_migrate_local",
        "peak_rss_growth_local",
        "peak_rss_migrate_s3",
        "peak_rss_growth_s3",
    ],
    "plan": ["plan_1k_rows_seconds", "peak_rss_plan_1k_rows", "rerun_finished_1k_seconds"],
    "apply_ops": ["apply_ops_per_minute", "apply_floor_ratio", "apply_api_calls_per_op"],
    "dask_plane": [
        "inprocess_bytes_throughput",
        "dask_1_worker_throughput",
        "dask_1_vs_inprocess",
        "dask_2_workers_throughput",
        "dask_2_vs_inprocess",
        "workers_to_saturate_one_token",
    ],
    "archive_copy": [
        "archive_throughput",
        "raw_boto3_throughput",
        "archive_vs_raw_boto3",
        "peak_rss_archive",
        "peak_rss_growth_archive",
    ],
    "end_to_end": [
        "e2e_5_videoferry_seconds",
        "e2e_5_naive_seconds",
        "e2e_naive_vs_videoferry",
        "e2e_videoferry_vs_floor",
    ],
}
#: `name: number [unit] [(note)]`
LINE = re.compile(
    r"^(?P<name>[a-z0-9_]+): (?P<value>-?[0-9]+(?:\.[0-9]+)?)(?: [A-Za-z/]+)?(?: \((?P<note>.*)\))?$"
)

#: name -> (value, note) of one benchmark's printed figures.
Figures = dict[str, tuple[float, str]]


def _found(pattern: str, note: str) -> re.Match[str]:
    match = re.search(pattern, note)
    assert match, f"{pattern!r} not in the note {note!r}"
    return match


def _no_429(figures: Figures, *names: str) -> None:
    for name in names:
        assert _found(r"\b(\d+) 429s\b", figures[name][1])[1] == "0", (name, figures[name][1])


def _all_done(figures: Figures, name: str, noun: str) -> None:
    match = _found(rf"\b(\d+) {noun}, (\d+) done\b", figures[name][1])
    assert int(match[1]) > 0 and match[1] == match[2], (name, figures[name][1])


def _rate_cap(figures: Figures) -> None:
    assert figures["rate_cap_429s"][0] == 0
    for name in ("rate_cap_peak_second", "rate_cap_peak_minute"):
        value, note = figures[name]
        peak, limit = (int(g) for g in _found(r": (\d+) calls / (\d+)$", note).groups())
        assert 0 < peak <= limit, (name, note)  # exact counts: the printed ratio is rounded
        assert value <= 1.0
    _all_done(figures, "rate_cap_share", "items")


def _api_calls(figures: Figures) -> None:
    for name in ("api_calls_per_video_tus", "api_calls_per_video_url"):
        _no_429(figures, name)
        _all_done(figures, name, "videos")


def _end_to_end(figures: Figures) -> None:
    _no_429(figures, *(n for n in figures if re.fullmatch(r"e2e_\d+_videoferry(_prefect)?_seconds", n)))


def _apply_ops(figures: Figures) -> None:
    note = figures["apply_api_calls_per_op"][1]
    assert _found(r"429s: (\d+)", note)[1] == "0", note
    operations, done = (
        int(g)
        for g in _found(r"\b(\d+) operations \(.*\b(\d+) done\b", figures["apply_ops_per_minute"][1]).groups()
    )
    assert operations > 0 and operations == done, figures["apply_ops_per_minute"]
    writes = int(_found(r"\b(\d+) writes\b", note)[1])
    assert writes == operations, note  # one write per operation, none repeated
    assert figures["apply_api_calls_per_op"][0] >= float(_found(r"least (\d+\.\d+)", note)[1]), note


#: Invariants that hold in --quick mode too, read from each benchmark's printed figures.
INVARIANTS: dict[str, Callable[[Figures], None]] = {
    "rate_cap": _rate_cap,
    "api_calls": _api_calls,
    "end_to_end": _end_to_end,
    "apply_ops": _apply_ops,
}


def run_bench(*args: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args, "--quick", "--workdir", str(workdir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.parametrize("name", list(EXPECTED))
def test_benchmark_prints_its_figures(name: str, tmp_path: Path) -> None:
    proc = run_bench(name, workdir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    names = []
    figures: Figures = {}
    for line in lines:
        match = LINE.match(line)
        assert match, f"not a figure line: {line!r}"
        names.append(match["name"])
        figures[match["name"]] = (float(match["value"]), match["note"] or "")
    assert names == EXPECTED[name]
    if name in INVARIANTS:
        INVARIANTS[name](figures)
    assert list(tmp_path.iterdir()) == [], "the work directory was not cleaned up"


def test_results_file_has_the_command_and_the_figures(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    results.write_text(
        "old figures\n<!-- hand-written notes below: kept when `python -m bench --results` "
        "rewrites this file -->\nmy notes\n"
    )
    work = tmp_path / "work"
    proc = run_bench("help_time", "--results", str(results), workdir=work)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = results.read_text()
    assert f"`.venv/bin/python -m bench help_time --results {results} --quick" in text
    assert proc.stdout.strip() in text
    assert "old figures" not in text
    assert text.endswith("\nmy notes\n")


def test_unknown_benchmark_is_refused(tmp_path: Path) -> None:
    proc = run_bench("no_such_bench", workdir=tmp_path)
    assert proc.returncode == 2
    assert "unknown benchmark 'no_such_bench'" in proc.stderr

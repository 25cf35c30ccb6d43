"""Every benchmark runs in --quick mode, prints its figures and keeps the invariants that hold at any size."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.baseline import FAULTED_ROUNDS

REPO = Path(__file__).resolve().parents[2]

#: The figure names each benchmark prints in --quick mode (sizes are part of some names).
EXPECTED = {
    "help_time": ["help_wall_seconds"],
    "api_calls": [
        "api_calls_per_video_tus",
        "api_calls_per_video_url",
        "api_calls_per_video_webhook",
        "api_calls_per_video_metadata",
        "api_calls_per_video_lost",
        "api_calls_per_video_tidy_lost",
        "api_calls_per_video_tus_rate_limited",
    ],
    "rate_cap": ["rate_cap_share", "rate_cap_peak_second", "rate_cap_peak_minute", "rate_cap_429s"],
    "throughput": [
        "raw_single_request_throughput",
        "tus_throughput",
        "tus_connector_throughput",
        "tuspy_throughput",
        "tus_vs_raw_throughput",
        "tus_connector_vs_raw_throughput",
        "tus_vs_tuspy_throughput",
        "tus_whole_run_vs_raw",
    ],
    "memory": [
        "peak_rss_migrate_local",
        "peak_rss_growth_local",
        "peak_rss_migrate_s3",
        "peak_rss_growth_s3",
    ],
    "plan": ["plan_1k_rows_seconds", "peak_rss_plan_1k_rows", "rerun_finished_1k_seconds"],
    "bytes_at_once": [
        "raw_8_throughput",
        "tus_8_throughput",
        "tus_8_vs_raw_8",
        "tus_resume_resent_chunks",
        "s3_stream_vs_get_upload",
    ],
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
        "verified_boto3_throughput",
        "raw_boto3_throughput",
        "archive_vs_verified_boto3",
        "archive_vs_raw_boto3",
        "peak_rss_archive",
        "peak_rss_growth_archive",
    ],
    "remote_ledger": [
        "local_ledger_migrate_seconds",
        "remote_ledger_migrate_seconds",
        "remote_ledger_overhead_seconds",
        "remote_ledger_s3_requests",
    ],
    "processing_queue": [
        "e2e_5_plain_processing_queue_seconds",
        "e2e_5_plain_processing_queue_vs_floor",
        "e2e_5_plain_processing_queue_tail_vs_queue_floor",
    ],
    "backup_copy": [
        "backup_throughput",
        "backup_verified_boto3_throughput",
        "backup_raw_boto3_throughput",
        "backup_vs_verified_boto3",
        "backup_vs_raw_boto3",
        "peak_rss_backup",
        "peak_rss_growth_backup",
        "restore_tus_seconds",
        "restore_url_seconds",
        "restore_url_vs_tus",
    ],
    "end_to_end": [
        "e2e_5_plain_seconds",
        "e2e_5_plain_vs_floor",
        "e2e_5_webhooks_seconds",
        "e2e_5_webhooks_vs_floor",
        "e2e_5_plain_tus_rate_limited_seconds",
        "e2e_5_plain_tus_rate_limited_vs_floor",
        "e2e_30_plain_burst_seconds",
        "e2e_30_plain_burst_vs_floor",
        "e2e_30_plain_burst_creates_per_second",
        "e2e_30_plain_burst_vs_limit",
        "e2e_5_naive_seconds",
        "e2e_naive_vs_videoferry",
        "e2e_5_plain_tus_rate_limited_vs_default",
    ],
    "baseline": [
        *(f"careful_6_{n}" for n in ("seconds", "api_calls", "429s", "duplicates")),
        *(
            f"careful_6_faults_{n}"
            for n in ("seconds", "api_calls", "429s", "duplicates", "lost", "idle_seconds")
        ),
        *(f"videoferry_6_{n}" for n in ("seconds", "api_calls", "429s", "duplicates")),
        *(
            f"videoferry_6_faults_{n}"
            for n in ("seconds", "api_calls", "429s", "duplicates", "lost", "idle_seconds")
        ),
        "videoferry_6_rerun_lost",
        "careful_vs_videoferry_faults",
        "videoferry_faults_vs_clean",
        "baseline_cpu_seconds",
    ],
    "platform_listing": [
        "platform_listing_200_seconds",
        "platform_listing_200_peak_rss",
        "platform_rows_200_peak_rss",
        "platform_url_migration_10_seconds",
        "platform_url_migration_10_vs_floor",
    ],
    "cpu_per_item": [
        *(f"cpu_per_item_{job}_{n}" for n in (20, 40, 60) for job in ("migrate", "apply")),
        *(f"cpu_per_item_growth_20_to_{n}_{job}" for job in ("migrate", "apply") for n in (40, 60)),
        "cpu_per_item_growth_20_to_40",
        "cpu_per_item_growth_20_to_60",
        *(
            name
            for job in ("migrate", "apply")
            for name in (
                f"cpu_slope_{job}_20_to_40",
                f"cpu_slope_{job}_40_to_60",
                f"cpu_slope_growth_40_to_60_{job}",
            )
        ),
        "cpu_slope_growth_40_to_60",
    ],
}
#: `name: number [unit] [[spread]] [(note)]`
LINE = re.compile(
    r"^(?P<name>[a-z0-9_]+): (?P<value>-?[0-9]+(?:\.[0-9]+)?)(?: [A-Za-z/]+)?"
    r"(?: \[(?P<spread>one run|min -?[0-9.]+ / max -?[0-9.]+ of \d+ rounds)\])?(?: \((?P<note>.*)\))?$"
)

#: name -> (value, note) of one benchmark's printed figures.
Figures = dict[str, tuple[float, str]]


def _found(pattern: str, note: str) -> re.Match[str]:
    match = re.search(pattern, note)
    assert match, f"{pattern!r} not in the note {note!r}"
    return match


#: Runs under the emulator's `tus-rate-limited` variant: its upload address answers 429 until the client's
#: tus requests pass its limiter (waited out by design), so those runs may show a few.
UPLOAD_429 = "tus_rate_limited"


def _no_429(figures: Figures, *names: str) -> None:
    for name in (n for n in names if UPLOAD_429 not in n):
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
    # The share is over the whole run: its span runs from the first call to the last, all of them counted.
    note = figures["rate_cap_share"][1]
    found = _found(r"^(\d+) API calls .* admit at most (\d+) in that span", note)
    calls, ceiling = int(found[1]), int(found[2])
    assert 0 < calls <= ceiling, note


def _api_calls(figures: Figures) -> None:
    for name in EXPECTED["api_calls"]:
        _no_429(figures, name)
        _all_done(figures, name, "videos")
        value, note = figures[name]
        # Never fewer calls than the inventory needs (creates and finish writes).
        assert value >= float(_found(r"^least (\d+\.\d+) ", note)[1]), (name, note)
        videos = _found(r"\b(\d+) videos, \d+ done \((\d+) finished\)", note)
        assert videos[1] == videos[2], (name, note)


def _end_to_end(figures: Figures) -> None:
    runs = [n for n in figures if re.fullmatch(r"e2e_\d+_[a-z_]+_seconds", n) and "naive" not in n]
    _no_429(figures, *runs)
    # The breakdown's landmarks come in order and add up to the run's wall time.
    for name in (n for n in figures if n.endswith("_vs_floor")):
        value, note = figures[name]
        wall, floor = (float(x) for x in _found(r"^(\d+\.\d+) s / (\d+\.\d+) s floor", note).groups())
        assert value >= 1.0 and abs(value - wall / floor) <= 0.02 * value, (name, note)  # rounded figures
        parts = [float(x) for x in re.findall(r"(?:startup|creates|tail|finish|exit) (-?\d+\.\d+) s", note)]
        assert len(parts) == 5 and all(p >= 0 for p in parts), (name, note)
        assert abs(sum(parts) - wall) < 0.5, (name, note)
    # Under the processing queue the tail is never shorter than the queue's own floor for those creates.
    for name in (n for n in figures if n.endswith("_tail_vs_queue_floor")):
        value, note = figures[name]
        tail, least = (
            float(x) for x in _found(r"^(\d+\.\d+) s from .* / (\d+\.\d+) s the queue", note).groups()
        )
        assert value >= 1.0 and tail >= least, (name, note)
    # Where the per-second window binds, the creates never beat it by more than the least span's granularity
    # (whole-second bursts: an even spread beats them by one interval of the span).
    for name in (n for n in figures if n.endswith("_burst_vs_limit")):
        assert 0.0 < figures[name][0] <= 1.05, (name, figures[name][1])


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


def _baseline(figures: Figures) -> None:
    # Clean, the careful script ends every file done with one video each; under faults ours never duplicates
    # (a file it could not migrate is failed with a reason, not hidden: no invariant on lost files).
    assert "the script reported 6 done;" in figures["careful_6_seconds"][1], figures["careful_6_seconds"]
    assert figures["careful_6_duplicates"][0] == 0
    assert figures["videoferry_6_faults_duplicates"][0] == 0, figures["videoferry_6_faults_duplicates"]
    assert 0 <= figures["videoferry_6_faults_lost"][0] <= 6
    # ... and one rerun with the faults off finishes them, still without a duplicate.
    assert figures["videoferry_6_rerun_lost"][0] == 0, figures["videoferry_6_rerun_lost"]
    rerun = figures["videoferry_6_rerun_lost"]
    assert rerun[1].count(", 0 duplicates") == FAULTED_ROUNDS, rerun
    # Our clean run, the one the faulted rounds are held to, ends as the careful script's does.
    assert "exit status 0" in figures["videoferry_6_seconds"][1], figures["videoferry_6_seconds"]
    assert figures["videoferry_6_duplicates"][0] == 0
    assert figures["videoferry_6_faults_api_calls"][0] > 0 and figures["careful_6_faults_api_calls"][0] > 0


def _plan(figures: Figures) -> None:
    # The finished ledger is built by the ledger's own batch steps; its rerun makes one call (the preflight).
    note = figures["rerun_finished_1k_seconds"][1]
    assert "1000 items are all finished (by the ledger's batch steps" in note, note
    assert _found(r"\b(\d+) API calls \(", note)[1] == "1", note


#: Invariants that hold in --quick mode too, read from each benchmark's printed figures.
def _remote_ledger(figures: Figures) -> None:
    value, note = figures["remote_ledger_s3_requests"]
    puts = int(_found(r"\bPUT (\d+)\b", note)[1])  # the lock taken and the ledger replicated: both PUT
    assert 0 < puts <= value, note


def _platform_listing(figures: Figures) -> None:
    # 200 videos at 100 a page: the two access checks and two pages; every video listed.
    note = figures["platform_listing_200_seconds"][1]
    assert note.startswith("200 videos from the Vimeo stand-in") and " in 4 calls" in note, note
    assert figures["platform_url_migration_10_vs_floor"][0] >= 1.0  # never faster than the limits allow


def _bytes_at_once(figures: Figures) -> None:
    # The connection was cut once, and the upload resumed from the server's offset: at most a chunk again.
    value, note = figures["tus_resume_resent_chunks"]
    assert "(1 cut)" in note and 0 <= value <= 1.0, note
    assert "saw PATCH@0 cut, HEAD 200, PATCH@" in note, note  # the first PATCH was cut; the HEAD came next
    # The S3 object (8 MiB with --quick, several PATCHes) is read from one GET kept open, not one per PATCH.
    note = figures["s3_stream_vs_get_upload"][1]
    assert "(chunks from 1 MiB doubling up to 128 MiB; GETs of the object per upload: 1, 1)" in note, note


INVARIANTS: dict[str, Callable[[Figures], None]] = {
    "bytes_at_once": _bytes_at_once,
    "platform_listing": _platform_listing,
    "rate_cap": _rate_cap,
    "api_calls": _api_calls,
    "end_to_end": _end_to_end,
    "processing_queue": _end_to_end,
    "apply_ops": _apply_ops,
    "baseline": _baseline,
    "plan": _plan,
    "remote_ledger": _remote_ledger,
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


#: The smoke runs of half a minute or more each (the careful script beside a faulted run, the end-to-end
#: paths, the call counts, the archive and backup copies, memory, the remote ledger): make chaos runs them
#: (marker long), so make test keeps its time; the rest run in make test.
LONG_SMOKES = {
    "baseline",
    "end_to_end",
    "api_calls",
    "archive_copy",
    "backup_copy",
    "memory",
    "remote_ledger",
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.long) if n in LONG_SMOKES else n for n in EXPECTED]
)
def test_benchmark_prints_its_figures(name: str, tmp_path: Path) -> None:
    proc = run_bench(name, workdir=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    names = []
    figures: Figures = {}
    for line in lines:
        match = LINE.match(line)
        assert match, f"not a figure line: {line!r}"
        # Every measured (non-integer) value has three decimals and its spread.
        assert "." not in match["value"] or len(match["value"].split(".")[1]) == 3, line
        assert ("." in match["value"]) == (match["spread"] is not None), line
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
    # One run: the commit and date at the top, the calibration figure, the targets it did not measure.
    assert "**--quick sizes: a format sample, not figures**" in text
    assert re.search(r"^- commit [0-9a-f]{7,}.*, 20\d\d-\d\d-\d\d \d\d:\d\d UTC", text, re.M), text[:800]
    assert re.search(
        r"^calibration_cpu_loop_seconds: \d\.\d{3} s \[min [0-9.]+ / max [0-9.]+ of 6 rounds\]", text, re.M
    )
    assert "| `tus_vs_raw_throughput` | >= 0.95 | not measured |" in text


def test_unknown_benchmark_is_refused(tmp_path: Path) -> None:
    proc = run_bench("no_such_bench", workdir=tmp_path)
    assert proc.returncode == 2
    assert "unknown benchmark 'no_such_bench'" in proc.stderr

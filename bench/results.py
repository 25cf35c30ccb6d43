"""Writes RESULTS.md from one run: the commit, the machine, the calibration, the targets, every figure."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.figures import Figure, number
from bench.services import REPO

#: Everything below this line in an existing RESULTS.md is kept when the file is written again.
KEEP_MARKER = "<!-- hand-written notes below: kept when `python -m bench --results` rewrites this file -->"


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            memory = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores ({cpu}){memory}, {system}, Python {platform.python_version()}"


def commit() -> str:
    """The commit the run measured (`HEAD`'s short hash), marked when the work tree had changes."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip() + (
        " (with uncommitted changes in the work tree)" if dirty.stdout.strip() else ""
    )


#: The targets RESULTS.md checks: figure, "max" or "min", bound, meaning. Each bound's reason is in
#: bench/README.md ("The bounds"); a bound changes only with its reason written there.
TARGETS: tuple[tuple[str, str, float, str], ...] = (
    ("cpu_per_item_growth_1k_to_20k", "max", 1.15, "CPU per item flat from 1k to 20k items (migrate, apply)"),
    ("cpu_slope_growth_20k_to_100k", "max", 1.10, "CPU per extra item, 20k->100k / 1k->20k (both jobs)"),
    ("tus_vs_raw_throughput", "min", 0.95, "tus at least 0.95 of one raw request (median of rounds)"),
    ("tus_vs_tuspy_throughput", "min", 1.0, "tus at least as fast as tuspy (its chunks our first's size)"),
    ("tus_8_vs_raw_8", "min", 0.9, "8 tus transfers at once at least 0.9 of 8 raw streams (aggregate)"),
    ("s3_stream_vs_get_upload", "min", 0.9, "an S3 object streamed to the service vs S3 GET + raw upload"),
    ("tus_resume_resent_chunks", "max", 1.0, "a tus upload resumed after a cut: at most a chunk again"),
    ("e2e_300_webhooks_vs_floor", "max", 1.10, "300 items by webhook against the floor (claims confirmed)"),
    ("e2e_3000_plain_vs_floor", "max", 1.03, "3000 items --no-prefect against the floor (limits x5)"),
    (
        "e2e_3000_prefect_vs_floor",
        "max",
        1.05,
        "3000 items through a running Prefect server against the floor",
    ),
    ("e2e_300_plain_burst_vs_limit", "min", 0.9, "creates per second / 10 where the per-second window binds"),
    ("e2e_300_prefect_burst_vs_limit", "min", 0.9, "the same through a running Prefect server"),
    ("archive_vs_verified_boto3", "min", 0.9, "archive's copy at least 0.9 of boto3's, md5 checked by both"),
    ("backup_vs_verified_boto3", "min", 0.9, "backup's copy at least 0.9 of boto3's, md5 checked by both"),
    ("rate_cap_share", "min", 0.98, "share of what the limits admit over the whole run"),
    ("rate_cap_429s", "max", 0.0, "no 429 in the long run"),
    ("api_calls_per_video_webhook", "max", 1.03, "API calls per video with statuses by webhook (100 videos)"),
    ("plan_100k_rows_seconds", "max", 3.0, "plan 100k rows"),
    ("rerun_finished_100k_seconds", "max", 3.0, "rerun over a finished 100k ledger"),
    ("videoferry_faults_vs_clean", "max", 1.5, "300 clips under chaos seed 1's faults against the clean run"),
    ("careful_vs_videoferry_faults", "min", 2.0, "the careful script's seconds / ours under the same faults"),
)
_INTRO = (
    "Written whole by one run of the command named just below (`make bench-alone` writes `bench/RESULTS.md`, "
    "`make bench-scale` `bench/RESULTS-scale.md`; what each figure means and how it is measured: "
    "`bench/README.md`): every section comes from the commit and the "
    "day named just below. Each figure gives its spread (`[min / max of N rounds]`, or `[one run]`); in the "
    "targets, a figure whose spread crosses its bound is `not resolved`, one measured once says so. Compare "
    "two days' seconds in proportion to the calibration figure."
)


def verdict(figure: Figure, kind: str, bound: float) -> str:
    """`yes` / `no` when the whole spread is on one side of the bound, `not resolved` when it crosses it;
    a figure measured once says `(one run)`."""
    if not isinstance(figure.value, (int, float)):
        return "not a number"

    def ok(v: float) -> bool:
        return v <= bound if kind == "max" else v >= bound

    spread = figure.spread
    if spread is None:
        return f"{'yes' if ok(float(figure.value)) else 'no'} (one run)"
    low, high = spread
    if ok(low) and ok(high):
        return "yes"
    if not ok(low) and not ok(high):
        return "no"
    return "not resolved"


def targets(figures: dict[str, Figure]) -> list[str]:
    """The targets table, from the figures as measured (their spreads, not only the printed value)."""
    lines = ["## Targets", "", "| target | figure | bound | value | spread | met |", "|" + "---|" * 6]
    for name, kind, bound, what in TARGETS:
        sign = "<=" if kind == "max" else ">="
        figure = figures.get(name)
        if figure is None:
            lines.append(f"| {what} | `{name}` | {sign} {bound:g} | not measured | | |")
            continue
        value = number(figure.value) if isinstance(figure.value, float) else str(figure.value)
        spread = figure.spread_text() if isinstance(figure.value, float) else "count"
        lines.append(
            f"| {what} | `{name}` | {sign} {bound:g} | {value} | {spread} | {verdict(figure, kind, bound)} |"
        )
    return lines


@dataclass(frozen=True)
class Section:
    """One benchmark's part of RESULTS.md: its figures as measured and the text written for them."""

    name: str
    figures: tuple[Figure, ...]
    text: str


def section(
    name: str,
    figures: list[Figure],
    notes: list[str],
    seconds: float,
    load: tuple[float, float],
    beside: list[str],
    failed: bool,
) -> Section:
    """One benchmark's section: how it ran, then its figure lines, then the notes it printed."""
    company = f"beside {', '.join(beside)}" if beside else "alone"
    lines = [
        f"## {name}",
        "",
        f"- ran {company}; {seconds:.0f} s, load {load[0]:.2f} at the start, {load[1]:.2f} at the end",
    ]
    if failed:
        lines.append("- FAILED (see the run's output)")
    lines += ["", "```", *(f.line() for f in figures), "```"]
    if notes:
        lines += ["", *(f"- note: {n}" for n in notes)]
    return Section(name, tuple(figures), "\n".join(lines) + "\n")


def write_results(
    path: Path,
    sections: list[Section],
    command: str,
    calibration: Figure,
    started: datetime,
    seconds: float,
    header: str = "",
    measured: str = "",
) -> None:
    """Write RESULTS.md from this run alone: the header (commit, date, machine, calibration), the targets
    table computed from its figures, its sections, and the hand-written notes kept below KEEP_MARKER.

    header: a line put first (a format sample's warning that its figures are not ones to quote).
    measured: the commit as read when the run started (commit()); read now when not given.
    """
    kept = ""
    if path.exists():
        text = path.read_text()
        if KEEP_MARKER in text:
            kept = text.split(KEEP_MARKER, 1)[1]
    figures = {f.name: f for s in sections for f in s.figures}
    lines = ["# Benchmark results", ""]
    if header:
        lines += [f"**{header}**", ""]
    lines += [
        _INTRO,
        "",
        f"- commit {measured or commit()}, {started.strftime('%Y-%m-%d %H:%M UTC')}, {seconds / 60:.1f} "
        "minutes",
        f"- command: `{command}`",
        f"- machine: {_machine()}",
        "",
        "```",
        calibration.line(),
        "```",
        "",
        *targets(figures),
        "",
    ]
    lines += [s.text for s in sections]
    lines += [KEEP_MARKER]
    path.write_text("\n".join(lines) + (kept if kept else "\n"))


def now() -> datetime:
    """The run's start, for the header."""
    return datetime.now(UTC)


def command_line(argv: list[str]) -> str:
    """The command as typed from the repository root, with the VIDEOFERRY_BENCH_* variables that were set
    (they change sizes and rounds)."""
    settings = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("VIDEOFERRY_BENCH_"))
    return " ".join([*settings, shlex.join([".venv/bin/python", "-m", "bench", *argv])])

"""Wall time of `videoferry --help`, against a bare Python interpreter start."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.figures import Figure
from bench.services import REPO
from bench.workload import BenchConfig

RUNS = 7
QUICK_RUNS = 2


def _wall(command: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{command[-1]} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return elapsed


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Time the console script with --help (first run, then the median of the next runs)."""
    script = Path(sys.executable).parent / "videoferry"
    command = (
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "videoferry.flows.cli", "--help"]
    )
    runs = QUICK_RUNS if cfg.quick else RUNS
    times = [_wall(command) for _ in range(runs)]
    bare = statistics.median(_wall([sys.executable, "-c", "pass"]) for _ in range(runs))
    median = statistics.median(times[1:]) if len(times) > 1 else times[0]
    yield Figure(
        "help_wall_seconds",
        median,
        "s",
        f"`videoferry --help`, median of {len(times) - 1} warm runs (first run {times[0]:.2f} s); "
        f"bare `python -c pass` {bare:.3f} s = {median / bare:.1f} x",
    )

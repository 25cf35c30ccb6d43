"""Writes RESULTS.md: the figures of one run, the command, the machine; keeps the hand-written notes."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from bench.figures import Figure
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


def _commit() -> str:
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


def write_results(
    path: Path,
    figures: list[tuple[str, Figure]],
    notes: list[str],
    timings: dict[str, float],
    total: float,
    argv: list[str],
    failed: list[str],
) -> None:
    """Write the run's figures (grouped by benchmark) and keep any hand-written notes already in the file."""
    kept = ""
    if path.exists():
        old = path.read_text()
        if KEEP_MARKER in old:
            kept = old.split(KEEP_MARKER, 1)[1]
    command = shlex.join([".venv/bin/python", "-m", "bench", *argv])
    lines = [
        "# Benchmark results",
        "",
        "Figures of one run (what each means, and how it is measured: `bench/README.md`).",
        "",
        f"- command: `{command}` (from the repository root; `make bench` runs `.venv/bin/python -m bench`)",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {_machine()}",
        f"- commit: {_commit()}",
        f"- wall time: {total:.0f} s in all ("
        + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in timings.items())
        + ")",
    ]
    if failed:
        lines.append(f"- FAILED: {', '.join(failed)}")
    lines += ["", "```"]
    current = None
    for name, figure in figures:
        if name != current:
            if current is not None:
                lines.append("")
            lines.append(f"# {name}")
            current = name
        lines.append(figure.line())
    lines.append("```")
    if notes:
        lines += ["", "Notes printed by the run:", ""]
        lines += [f"- {note}" for note in notes]
    lines += ["", KEEP_MARKER]
    path.write_text("\n".join(lines) + (kept if kept else "\n"))

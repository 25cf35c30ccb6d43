"""A fixed CPU loop's seconds: the machine's speed on the day, printed with every RESULTS.md."""

from __future__ import annotations

import time

from bench.figures import Figure, with_rounds

#: The loop's size: about 0.3 s on one core of the machine RESULTS.md names when it is quiet.
LOOP = 2_000_000


def loop_seconds() -> float:
    """Seconds (CPU time of this thread) of one pass of the fixed loop: integer arithmetic, no allocation
    beyond the interpreter's own, no I/O."""
    started = time.thread_time()
    total = 0
    for i in range(LOOP):
        total = (total + i * i) % 1_000_003
    if total < 0:  # never: keeps the loop's result used
        raise AssertionError(total)
    return time.thread_time() - started


def calibrate(rounds: int = 3) -> list[float]:
    """The loop's seconds, `rounds` times."""
    return [loop_seconds() for _ in range(rounds)]


def figure(before: list[float], after: list[float]) -> Figure:
    """`calibration_cpu_loop_seconds`: the median of the passes at the run's start and end, all of them as
    its rounds; the note keeps the two apart (a machine that got busier meanwhile shows it)."""
    shown = ", ".join(f"{s:.3f}" for s in before)
    ended = ", ".join(f"{s:.3f}" for s in after)
    return with_rounds(
        "calibration_cpu_loop_seconds",
        [*before, *after],
        "s",
        f"CPU seconds of a fixed loop ({LOOP:,} integer steps, bench/calibration.py), at the run's start: "
        f"{shown}; at its end: {ended}; compare two days' figures in proportion to it",
    )

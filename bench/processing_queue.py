"""A whole migration under the processing-queue variant: its tail after the last create against the queue."""

from __future__ import annotations

from collections.abc import Iterator

from bench.end_to_end import Run, measure_run
from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes

#: 300 clips at the spec's limits, 4 videos processed at once (2 s each: 150 s of processing against 60 s of
#: creates, so the queue sets the end); --quick: 5 clips, 2 at once.
FULL = Run(300, 1, "plain", ("processing-queue",), slots=4)
QUICK = Run(5, 1, "plain", ("processing-queue",), slots=2)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """The run in a fresh workspace of its own emulator, measured as bench/end_to_end.py measures its runs.

    Its figures are a ratio to a floor the queue sets (the creates, then about 90 s of one poll every 5 s),
    which the load of the benchmarks beside it barely moves: so it runs with `make bench`'s set, not with
    the timing-sensitive ones (in `make bench-alone` it fills the wait for `baseline` at the set's end)."""
    one = QUICK if cfg.quick else FULL
    root = cfg.subdir("processing-queue")
    with EmulatorProcess(root) as emu:
        _, _, figures = measure_run(one, emu, root, clip_bytes(), None)
    yield from figures

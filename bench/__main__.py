"""`python -m bench [NAME...] [--quick] [--results PATH]`: run the benchmarks, one printed line per figure."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.figures import Figure
from bench.workload import BenchConfig

#: Every benchmark, in the order a full run takes them (module bench.<name>, function run(cfg)).
BENCHMARKS = (
    "help_time",
    "api_calls",
    "rate_cap",
    "throughput",
    "memory",
    "plan",
    "apply_ops",
    "dask_plane",
    "archive_copy",
    "end_to_end",
    "baseline",
)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"benchmarks to run (default all: {BENCHMARKS})"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; figures not meaningful)")
    parser.add_argument("--results", metavar="PATH", help="also write the figures as a RESULTS.md file")
    parser.add_argument("--workdir", metavar="DIR", help="where temporary files go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)})")
    return args


def _runner(name: str) -> Callable[[BenchConfig], Iterator[Figure]]:
    module = importlib.import_module(f"bench.{name}")
    fn: Callable[[BenchConfig], Iterator[Figure]] = module.run
    return fn


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks; exit status 1 when any of them crashed."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    names = args.names or list(BENCHMARKS)
    logging.basicConfig(level=logging.ERROR, format="  log: %(name)s: %(message)s")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    base = Path(args.workdir) if args.workdir else Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="videoferry-bench-", dir=base))
    cfg = BenchConfig(quick=args.quick, workdir=workdir)
    figures: list[tuple[str, Figure]] = []
    failed: list[str] = []
    timings: dict[str, float] = {}
    started = time.monotonic()
    try:
        for name in names:
            print(f"# {name}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                for figure in _runner(name)(cfg):
                    figures.append((name, figure))
                    print(figure.line(), flush=True)
            except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others' figures
                failed.append(name)
                traceback.print_exc()
                print(f"{name}: FAILED (see the traceback above)", flush=True)
            timings[name] = time.monotonic() - t0
            print(f"# {name} took {timings[name]:.1f} s", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    total = time.monotonic() - started
    print(f"# all benchmarks took {total:.1f} s", file=sys.stderr, flush=True)
    if args.results:
        from bench.results import write_results

        argv_used = sys.argv[1:] if argv is None else argv
        write_results(Path(args.results), figures, cfg.notes, timings, total, argv_used, failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

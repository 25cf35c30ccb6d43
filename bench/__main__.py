"""`python -m bench [NAME...] [--quick] [--results PATH]`: run the benchmarks, one printed line per figure."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.figures import Figure
from bench.workload import BenchConfig

#: Every benchmark, in the order a full run takes them (module bench.<name> unless MODULES says, function
#: run(cfg)).
BENCHMARKS = (
    "help_time",
    "api_calls",
    "rate_cap",
    "throughput",
    "memory",
    "plan",
    "bytes_at_once",
    "apply_ops",
    "dask_plane",
    "archive_copy",
    "remote_ledger",
    "processing_queue",
    "backup_copy",
    "end_to_end",
    "baseline",
    "cpu_per_item",
    "platform_listing",
)
#: The module of a benchmark named otherwise (`plan` measures migrate's plan: bench/planning.py).
MODULES = {"plan": "planning"}
#: Benchmarks run only when named (long: `make bench-scale`), not by a bare `python -m bench`.
OPT_IN = ("cpu_per_item", "platform_listing")
#: Benchmarks whose figures are times or ratios of times the background benchmarks would skew: a bare
#: `python -m bench` (`make bench`) runs every other benchmark but the OPT_IN ones; a bare
#: `python -m bench --alone` (`make bench-alone`) runs that set first and then these one after another with
#: nothing beside them, so one run measures every figure of RESULTS.md.
TIMING = ("throughput", "plan", "bytes_at_once", "archive_copy", "backup_copy", "end_to_end")
#: Benchmarks that mostly sleep (threads waiting on polls): in a run with others they start first, in a
#: background process (`python -m bench NAME` with its own work dir and emulator), and are collected last.
BACKGROUND = ("baseline", "api_calls")
#: How long the end of a run waits for a background benchmark still going.
BACKGROUND_WAIT = 1200.0
#: Benchmarks that compare the speed of two ways of moving the same bytes: in a run with others they go first,
#: before the background ones start, so the ratio is not whichever way the background happened to slow.
QUIET = ("throughput",)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benchmarks to run (default: all but the timing and opt-in ones; with --alone all but the "
        f"opt-in ones, the timing ones {TIMING} last and in turn); any of {BENCHMARKS}",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds; figures not meaningful)")
    parser.add_argument("--results", metavar="PATH", help="also write the figures as a RESULTS.md file")
    parser.add_argument("--workdir", metavar="DIR", help="where temporary files go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--alone",
        action="store_true",
        help="with names: run them in turn, none in the background; without: every benchmark but the opt-in "
        "ones, the timing-sensitive ones last, each with nothing else of ours running (make bench-alone)",
    )
    parser.add_argument(
        "--header",
        metavar="TEXT",
        help="a line put first in the --results file (e.g. that its figures are a format sample)",
    )
    parser.add_argument(
        "--skip", nargs="+", default=[], metavar="NAME", help="leave these out (make bench: the timing ones)"
    )
    # Written by a background benchmark's process for the run that started it.
    parser.add_argument("--figures-json", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    unknown = [n for n in [*args.names, *args.skip] if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)})")
    return args


def _runner(name: str) -> Callable[[BenchConfig], Iterator[Figure]]:
    module = importlib.import_module(f"bench.{MODULES.get(name, name)}")
    fn: Callable[[BenchConfig], Iterator[Figure]] = module.run
    return fn


class Background:
    """One benchmark in its own `python -m bench NAME` process, alongside the others; collected at the end."""

    def __init__(self, name: str, args: argparse.Namespace, workdir: Path) -> None:
        from bench.services import REPO

        self.name = name
        self.dir = workdir / f"{name}-background"
        self.dir.mkdir()
        self.json = self.dir / "figures.json"
        command = [sys.executable, "-m", "bench", name, "--workdir", str(self.dir / "work")]
        command += ["--figures-json", str(self.json)]
        command += ["--quick"] * args.quick + ["--keep"] * args.keep
        self._err = open(self.dir / "stderr", "w+")  # noqa: SIM115 - closed in collect()
        self.proc = subprocess.Popen(  # its figures come back in the JSON file, not on stdout
            command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=self._err, stdin=subprocess.DEVNULL
        )
        print(f"# {name}: started in the background (pid {self.proc.pid})", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Interrupt it when it still runs (it stops its emulator on SIGINT); kill it when it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def collect(self, cfg: BenchConfig) -> tuple[list[Figure], float, bool, tuple[float, float]]:
        """Wait for it; (its figures, noted as run alongside the others; its own seconds; whether it failed;
        the load when it started and ended).

        Its stderr (notes, a traceback) is shown here, after the others' output; its notes join cfg's.
        """
        print(f"# {self.name} (ran in the background, alongside the others)", file=sys.stderr, flush=True)
        try:
            self.proc.wait(BACKGROUND_WAIT)
        except subprocess.TimeoutExpired:
            print(f"# {self.name}: still running {BACKGROUND_WAIT:.0f} s later; stopped", file=sys.stderr)
            self.stop()
        self._err.seek(0)
        sys.stderr.write("".join(f"  {line}" for line in self._err.readlines() if not line.startswith("# ")))
        self._err.close()
        try:
            done = json.loads(self.json.read_text())
        except (OSError, ValueError):
            done = {"figures": [], "notes": [], "seconds": 0.0, "failed": [self.name], "loads": {}}
        cfg.notes.extend(done["notes"])
        figures = [
            dataclasses.replace(f, note=f"{f.note}; ran alongside the other benchmarks".lstrip("; "))
            for f in (Figure(**{**d, "rounds": tuple(d.get("rounds", ()))}) for d in done["figures"])
        ]
        load = tuple(done.get("loads", {}).get(self.name, (0.0, 0.0)))
        broken = bool(done["failed"]) or self.proc.returncode != 0
        return figures, float(done["seconds"]), broken, (float(load[0]), float(load[1]))


def main(argv: list[str] | None = None) -> int:
    """Run the chosen benchmarks; exit status 1 when any of them crashed."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    whole = args.alone and not args.names
    default = [n for n in BENCHMARKS if n not in OPT_IN and (whole or n not in TIMING)]
    names = [n for n in args.names or default if n not in args.skip]
    # The timing-sensitive ones go last, in turn, once the background benchmarks have been collected.
    alone_after = [n for n in names if n in TIMING and n not in QUIET] if whole else []
    names = [n for n in names if n not in alone_after]
    logging.basicConfig(level=logging.ERROR, format="  log: %(name)s: %(message)s")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    base = Path(args.workdir) if args.workdir else Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="videoferry-bench-", dir=base))
    cfg = BenchConfig(quick=args.quick, workdir=workdir)
    figures: list[tuple[str, Figure]] = []
    failed: list[str] = []
    timings: dict[str, float] = {}
    loads: dict[str, tuple[float, float]] = {}
    notes_of: dict[str, list[str]] = {}
    started = time.monotonic()
    background: list[Background] = []
    from bench.calibration import calibrate
    from bench.results import commit, now

    began = now()
    measured = commit() if args.results else ""  # the code this run measures, before anyone commits meanwhile
    calibrated = calibrate() if args.results else []

    def run_one(name: str) -> None:
        print(f"# {name}", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        load = os.getloadavg()[0]
        noted = len(cfg.notes)
        try:
            for figure in _runner(name)(cfg):
                figures.append((name, figure))
                print(figure.line(), flush=True)
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others' figures
            failed.append(name)
            traceback.print_exc()
            print(f"{name}: FAILED (see the traceback above)", flush=True)
        timings[name] = time.monotonic() - t0
        loads[name] = (load, os.getloadavg()[0])
        notes_of[name] = cfg.notes[noted:]
        print(f"# {name} took {timings[name]:.1f} s", file=sys.stderr, flush=True)

    #: name -> the benchmarks that ran beside it (in the background, or it in the background beside them).
    beside: dict[str, list[str]] = {}
    try:
        if len(names) > 1 and (whole or not args.alone):
            for name in [n for n in names if n in QUIET]:
                run_one(name)
            names = [n for n in names if n not in QUIET]
            background = [Background(n, args, workdir) for n in names if n in BACKGROUND]
            names = [n for n in names if n not in BACKGROUND]
        behind = [job.name for job in background]
        for name in names:
            run_one(name)
            beside[name] = behind
        for job in background:
            noted = len(cfg.notes)
            found, timings[job.name], broken, loads[job.name] = job.collect(cfg)
            beside[job.name] = [n for n in [*names, *behind] if n != job.name]
            notes_of[job.name] = cfg.notes[noted:]
            figures += [(job.name, figure) for figure in found]
            for figure in found:
                print(figure.line(), flush=True)
            if broken:
                failed.append(job.name)
                print(f"{job.name}: FAILED (see its output above)", flush=True)
            print(f"# {job.name} took {timings[job.name]:.1f} s (alongside the others)", file=sys.stderr)
            cfg.note(f"{job.name} ran in its own process alongside the other benchmarks (its time overlaps)")
        background = []
        for name in alone_after:
            run_one(name)
    finally:
        for job in background:
            job.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    total = time.monotonic() - started
    print(f"# all benchmarks took {total:.1f} s", file=sys.stderr, flush=True)
    if args.figures_json:
        done = {
            "figures": [dataclasses.asdict(f) for _, f in figures],
            "notes": cfg.notes,
            "seconds": total,
            "failed": failed,
            "loads": loads,
        }
        Path(args.figures_json).write_text(json.dumps(done))
    if args.results:
        from bench.calibration import figure as calibration
        from bench.results import command_line, section, write_results

        command = command_line(sys.argv[1:] if argv is None else argv)
        ran = [n for n in BENCHMARKS if n in timings]
        sections = [
            section(
                name,
                [f for n, f in figures if n == name],
                notes_of.get(name, []),
                timings[name],
                loads.get(name, (0.0, 0.0)),
                beside.get(name, []),
                name in failed,
            )
            for name in ran
        ]
        header = args.header or ("--quick sizes: a format sample, not figures" if args.quick else "")
        write_results(
            Path(args.results),
            sections,
            command,
            calibration(calibrated, calibrate()),
            began,
            total,
            header,
            measured,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

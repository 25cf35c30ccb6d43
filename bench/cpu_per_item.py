"""CPU per item of migrate and apply as the run grows: the coordinator's own CPU at 1k and 20k items."""

from __future__ import annotations

import csv
import dataclasses
import os
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.child import PYSPY_ENV, measure
from bench.figures import Figure, with_rounds
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, write_clips, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace

#: Scaled limits (real 10/s, 300/min x10 per second; the minute window x20 so it never binds before the
#: second's), the spec's 5 s poll interval divided by 10, 0.2 s of processing: the run is bound by the
#: coordinator's CPU or the per-second window, whichever is slower.
PER_SECOND, PER_MINUTE, POLL, PROCESSING = 100, 6000, 0.5, 0.2
TRANSFERS = 4
#: Sizes measured by default, and the long one behind VIDEOFERRY_BENCH_CPU_100K=N (N runs; about 20 minutes
#: per job and run).
SIZES, QUICK_SIZES, LONG = (1000, 20000), (20, 40, 60), 100_000
LONG_ENV = "VIDEOFERRY_BENCH_CPU_100K"
#: Interleaved rounds of SIZES (each size once per round; the figures are the medians), overridable by
#: ROUNDS_ENV; one with --quick. The long size runs once, after the rounds. The same code's 20k run read 3.16,
#: 3.35 and 3.87 ms per item in three runs here: one run per size cannot hold a 1.15 bound.
ROUNDS, ROUNDS_ENV = 3, "VIDEOFERRY_BENCH_CPU_ROUNDS"
#: Sizes instead of SIZES, comma-separated (issue 49's short form of the slope: 1000,5000,25000).
SIZES_ENV = "VIDEOFERRY_BENCH_CPU_SIZES"


@dataclass(frozen=True)
class Measured:
    """One job's run at one size: its seconds, its CPU (user + system, imports excluded), items done, and the
    system share of its CPU (the kernel's work for it: the ledger's fsyncs, sockets, page faults, which a
    profile of Python stacks does not tell apart from the user time)."""

    job: str
    items: int
    seconds: float
    cpu: float
    done: int
    load: str = ""
    system: float = 0.0
    #: The garbage collector's full passes while the job ran and their seconds (bench.child's gc): each walks
    #: every object the process holds, so more of them at a bigger size is a cost per item that grows.
    full_gc: tuple[int, float] = (0, 0.0)

    @property
    def per_item_ms(self) -> float:
        return self.cpu / self.items * 1000.0


def sizes(quick: bool) -> tuple[int, ...]:
    """The sizes this run measures, in order: SIZES once per round; with LONG_ENV=N, the long one at the end
    of each of the last N rounds (N=1: once, after them all; more than the rounds: the rest after them), so
    its runs pair round by round with the others' (one 100k run read 1.19 where other runs of the same code
    read 1.00-1.16: one run cannot hold the slope's bound)."""
    if quick:
        return QUICK_SIZES
    rounds = max(1, int(os.environ.get(ROUNDS_ENV) or ROUNDS))
    chosen = os.environ.get(SIZES_ENV)
    each = tuple(int(n) for n in chosen.split(",")) if chosen else SIZES
    long_runs = _long_runs(os.environ.get(LONG_ENV, ""))
    order: list[int] = []
    for round_number in range(rounds):
        order += each
        if round_number >= rounds - long_runs:
            order.append(LONG)
    return (*order, *(LONG,) * max(0, long_runs - rounds))


def _long_runs(value: str) -> int:
    """How many runs of the long size LONG_ENV asks for (unset or empty: none)."""
    if not value.strip():
        return 0
    if not value.strip().isdigit():
        raise ValueError(f"{LONG_ENV}={value!r}: expected a number of runs of {LONG} items (0, 1, 2, ...)")
    return int(value)


def _env(ws: Workspace, items: int) -> dict[str, str]:
    """The job's settings; a py-spy profile (bench.child's PYSPY_ENV) per size: FILE.<items>.<job>."""
    spy = os.environ.get(PYSPY_ENV)
    return {
        **({PYSPY_ENV: f"{spy}.{items}"} if spy else {}),
        "VIDEOFERRY_API_URL": ws.base_url,
        "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
        "VIDEOFERRY_TOKEN": ws.token,
        "VIDEOFERRY_RATE_PER_SECOND": str(PER_SECOND),
        "VIDEOFERRY_RATE_PER_MINUTE": str(PER_MINUTE),
    }


def write_updates(path: Path, ids: Sequence[str]) -> Path:
    """An operations file: one `update` (tags) per video, explicit ids (one write call each)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["op", "id", "target", "tags"])
        writer.writeheader()
        for n, video in enumerate(ids):
            writer.writerow({"op": "update", "id": f"tag-{n:06d}", "target": video, "tags": f"b;{n % 7}"})
    return path


def _timeout(items: int) -> float:
    return 600.0 + items * 0.1


def measure_pair(ctl: EmulatorControl, root: Path, data: bytes, items: int) -> tuple[Measured, Measured]:
    """Migrate `items` clips into a fresh workspace, then apply one update to each of the videos it made."""
    ws = ctl.create_workspace(processing="timed", processing_seconds=PROCESSING, poll_rule_seconds=POLL)
    ctl.set_limits(ws, rate_per_second=PER_SECOND, rate_per_minute=PER_MINUTE)
    run = root / f"run-{items}"
    clips = write_clips(run / "clips", items, data)
    inventory = write_inventory(run / "inventory.csv", [str(p) for p in clips])
    options: dict[str, Any] = {
        "inventory": str(inventory),
        "parent_id": ws.project_id,
        "ledger": str(run / "migrate.db"),
        "transfers": TRANSFERS,
        "wait_timeout": 600.0,
    }
    got = measure({"job": "migrate", "options": options}, _env(ws, items), timeout=_timeout(items))
    migrated = _measured("migrate", items, got, "finished")
    if migrated.done != items:
        raise RuntimeError(f"migrate of {items} clips ended {got['counts']} ({got['reasons']})")
    ids = [str(v["id"]) for v in ctl.videos(ws)]
    ops = write_updates(run / "ops.csv", ids)
    options = {
        "ops": str(ops),
        "ledger": str(run / "apply.db"),
        "transfers": TRANSFERS,
        "wait_timeout": 600.0,
    }
    got = measure({"job": "apply", "options": options}, _env(ws, items), timeout=_timeout(items))
    applied = _measured("apply", len(ids), got, "done")
    if got["exit_code"] != 0 or applied.done != len(ids):
        raise RuntimeError(f"apply of {len(ids)} updates ended {got['counts']} ({got['reasons']})")
    return migrated, applied


def _measured(job: str, items: int, got: dict[str, Any], done: str) -> Measured:
    """A job's run as bench.child reported it; its items in the state `done` counted as done."""
    cpu, system = got["cpu_seconds"], got["cpu_system_seconds"]
    full_gc = (int(got["gc"]["passes"][2]), float(got["gc"]["seconds"][2]))
    done_items = int(got["counts"].get(done, 0))
    return Measured(job, items, got["seconds"], cpu, done_items, system=system, full_gc=full_gc)


def _cpu(m: Measured) -> str:
    """A run's CPU split (user / system seconds) and its wall seconds, for telling an outlier's cause."""
    return f"user {m.cpu - m.system:.1f} s, system {m.system:.1f} s, wall {m.seconds:.1f} s"


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def _median(runs: Sequence[Measured]) -> float:
    return statistics.median(m.per_item_ms for m in runs)


def _samples(runs: Sequence[Measured]) -> str:
    """What a figure of several runs of one size stands on: their count and min / median / max."""
    if len(runs) == 1:
        return "one run"
    spread = sorted(m.per_item_ms for m in runs)
    each = "; ".join(_cpu(m) for m in runs)
    return (
        f"median of {len(runs)} interleaved runs, min {spread[0]:.2f} / max {spread[-1]:.2f} ms "
        f"(each run in order: {each})"
    )


def figures(results: Sequence[Measured]) -> Iterator[Figure]:
    """CPU per item for each job and size (the median of its runs); each job's growth from the smallest size
    to each bigger one (median over median), and the larger of the two jobs' growths under the name without
    the job (the issue's target: at most 1.15)."""
    limits = f"limits {PER_SECOND}/s {PER_MINUTE}/min, poll {POLL:g} s, processing {PROCESSING:g} s"
    by_size: dict[str, dict[int, list[Measured]]] = {}
    for m in results:
        by_size.setdefault(m.job, {}).setdefault(m.items, []).append(m)
    for job, items in dict.fromkeys((m.job, m.items) for m in results):
        runs = by_size[job][items]
        what = "clips by tus (--no-prefect)" if job == "migrate" else "updates (tags), one call each"
        cpu = statistics.median(m.cpu for m in runs)
        system = statistics.median(m.system for m in runs)
        wall = statistics.median(m.seconds for m in runs)
        passes = statistics.median(m.full_gc[0] for m in runs)
        collecting = statistics.median(m.full_gc[1] for m in runs)
        loads = "; ".join(m.load for m in runs if m.load)
        yield Figure(
            f"cpu_per_item_{job}_{_k(items)}",
            _median(runs),
            "ms",
            f"{items} {what}, {TRANSFERS} transfers, {limits}: {_samples(runs)}; median {cpu:.1f} s "
            f"CPU (user + system, imports excluded; system {system:.1f} s) in {wall:.1f} s wall = "
            f"{items / wall:.0f} items/s; full garbage collections {passes:g} ({collecting:.2f} s); {loads}",
            tuple(m.per_item_ms for m in runs) if len(runs) > 1 else (),
        )
    growth: dict[str, list[tuple[str, float]]] = {}
    for job in ("migrate", "apply"):
        sized = by_size.get(job, {})
        order = sorted(sized)
        for big in order[1:]:
            small = order[0]
            name = f"cpu_per_item_growth_{_k(small)}_to_{_k(big)}"
            big_ms, small_ms = _median(sized[big]), _median(sized[small])
            growth.setdefault(name, []).append((job, big_ms / small_ms))
            paired = _paired(sized[small], sized[big])
            yield Figure(
                f"{name}_{job}",
                big_ms / small_ms,
                note=f"{job}: {big_ms:.2f} ms / {small_ms:.2f} ms CPU per item "
                f"(medians; {_rounds(sized[small], sized[big])}); 1.0 = flat",
                rounds=tuple(b.per_item_ms / a.per_item_ms for a, b in paired) if len(paired) > 1 else (),
            )
    for name, ratios in growth.items():
        job, worst = max(ratios, key=lambda r: r[1])
        both = ", ".join(f"{j} {r:.3f}" for j, r in ratios)
        order = sorted(by_size[job])
        paired = _paired(by_size[job][order[0]], by_size[job][int(_size(name))])
        yield Figure(
            name,
            worst,
            note=f"the larger of the jobs' growths ({both}; the spread is {job}'s); 1.0 = flat",
            rounds=tuple(b.per_item_ms / a.per_item_ms for a, b in paired) if len(paired) > 1 else (),
        )
    yield from slopes(by_size)


def _size(growth_name: str) -> int:
    """The bigger size of a growth figure's name: `..._1k_to_20k` -> 20000."""
    text = growth_name.rsplit("_to_", 1)[1]
    return int(text[:-1]) * 1000 if text.endswith("k") else int(text)


def _paired(small: Sequence[Measured], big: Sequence[Measured]) -> list[tuple[Measured, Measured]]:
    """The runs of two sizes round by round; a size run once (the long one) pairs with each of the other's."""
    count = max(len(small), len(big))
    return [(small[min(i, len(small) - 1)], big[min(i, len(big) - 1)]) for i in range(count)]


def _slope(a: Measured, b: Measured) -> float:
    """CPU milliseconds per extra item from run a to the bigger run b (each run's fixed cost cancels)."""
    return (b.cpu - a.cpu) / (b.items - a.items) * 1000.0


def slopes(by_size: dict[str, dict[int, list[Measured]]]) -> Iterator[Figure]:
    """CPU per extra item between consecutive sizes (`cpu_slope_<job>_<a>_to_<b>`, median of the rounds), and
    with three sizes or more the last slope over the first (`cpu_slope_growth_<a>_to_<b>[_<job>]`: 1.0 = an
    extra item costs as much at scale as between the small sizes; the fixed cost of a run is in neither)."""
    growth: list[tuple[str, str, Figure]] = []
    for job in ("migrate", "apply"):
        sized = by_size.get(job, {})
        order = sorted(sized)
        found: list[tuple[int, int, list[float]]] = []
        for a, b in zip(order, order[1:], strict=False):
            each = [_slope(x, y) for x, y in _paired(sized[a], sized[b])]
            found.append((a, b, each))
            yield with_rounds(
                f"cpu_slope_{job}_{_k(a)}_to_{_k(b)}",
                each,
                "ms",
                f"{job}: CPU per extra item from {a} to {b} items (the difference of the runs' CPU / "
                f"{b - a} items, round by round: {', '.join(f'{v:.3f}' for v in each)} ms)",
            )
        if len(found) < 2:
            continue
        (a0, b0, first), (a1, b1, last) = found[0], found[-1]
        ratios = [y / x if x else 0.0 for x, y in zip(first, last, strict=False)]
        name = f"cpu_slope_growth_{_k(a1)}_to_{_k(b1)}"
        figure = with_rounds(
            f"{name}_{job}",
            ratios,
            note=f"{job}: CPU per extra item from {_k(a1)} to {_k(b1)} / from {_k(a0)} to {_k(b0)}, round by "
            f"round; 1.0 = linear",
        )
        growth.append((name, job, figure))
        yield figure
    if growth:
        name, job, worst = max(growth, key=lambda g: float(g[2].value))
        both = ", ".join(f"{j} {float(f.value):.3f}" for _, j, f in growth)
        yield Figure(
            name,
            worst.value,
            note=f"the larger of the jobs' slope growths ({both}; the spread is {job}'s); 1.0 = linear",
            rounds=worst.rounds,
        )


def _rounds(small: Sequence[Measured], big: Sequence[Measured]) -> str:
    """The growth within each round (its big run over its small run), when both sizes ran in every round."""
    if len(small) == len(big) == 1:
        return "one run each"
    if len(small) != len(big):
        return f"{len(small)} and {len(big)} runs"
    each = ", ".join(f"{b.per_item_ms / s.per_item_ms:.2f}" for s, b in zip(small, big, strict=True))
    return f"round by round {each}"


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Each run of a size in a fresh workspace of one emulator process (its CPU is not in the figures)."""
    root = cfg.subdir("cpu-per-item")
    data = clip_bytes()
    results: list[Measured] = []
    with EmulatorProcess(root) as emu:
        for n, items in enumerate(sizes(cfg.quick)):
            load = _load()
            migrated, applied = measure_pair(emu.ctl(), root / f"{n}", data, items)
            after = _load()
            results += [
                dataclasses.replace(m, load=f"{load} before, {after} after") for m in (migrated, applied)
            ]
            print(
                f"  {items}: migrate {migrated.per_item_ms:.2f} ms/item ({_cpu(migrated)}),"
                f" apply {applied.per_item_ms:.2f} ({_cpu(applied)})"
                f" (full gc: migrate {migrated.full_gc[0]} in {migrated.full_gc[1]:.2f} s,"
                f" apply {applied.full_gc[0]} in {applied.full_gc[1]:.2f} s)",
                file=sys.stderr,
                flush=True,
            )
    yield from figures(results)

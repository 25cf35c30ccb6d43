"""CPU per item of migrate and apply as the run grows: the coordinator's own CPU at 1k and 20k items."""

from __future__ import annotations

import csv
import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.child import measure
from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, write_clips, write_inventory
from emulator.control import EmulatorControl, Workspace

#: Scaled limits (real 10/s, 300/min x10 per second; the minute window x20 so it never binds before the
#: second's), the spec's 5 s poll interval divided by 10, 0.2 s of processing: the run is bound by the
#: coordinator's CPU or the per-second window, whichever is slower.
PER_SECOND, PER_MINUTE, POLL, PROCESSING = 100, 6000, 0.5, 0.2
TRANSFERS = 4
#: Sizes measured by default, and the long one behind VIDEOFERRY_BENCH_CPU_100K=1 (about 20 minutes per job).
SIZES, QUICK_SIZES, LONG = (1000, 20000), (20, 60), 100_000
LONG_ENV = "VIDEOFERRY_BENCH_CPU_100K"


@dataclass(frozen=True)
class Measured:
    """One job's run at one size: its seconds, its CPU (user + system, imports excluded), items done."""

    job: str
    items: int
    seconds: float
    cpu: float
    done: int
    load: str = ""

    @property
    def per_item_ms(self) -> float:
        return self.cpu / self.items * 1000.0


def sizes(quick: bool) -> tuple[int, ...]:
    """The sizes this run measures (100k added when LONG_ENV is set)."""
    if quick:
        return QUICK_SIZES
    return (*SIZES, LONG) if os.environ.get(LONG_ENV) == "1" else SIZES


def _env(ws: Workspace) -> dict[str, str]:
    return {
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
    got = measure({"job": "migrate", "options": options}, _env(ws), timeout=_timeout(items))
    migrated = Measured(
        "migrate", items, got["seconds"], got["cpu_seconds"], int(got["counts"].get("finished", 0))
    )
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
    got = measure({"job": "apply", "options": options}, _env(ws), timeout=_timeout(items))
    applied = Measured(
        "apply", len(ids), got["seconds"], got["cpu_seconds"], int(got["counts"].get("done", 0))
    )
    if got["exit_code"] != 0 or applied.done != len(ids):
        raise RuntimeError(f"apply of {len(ids)} updates ended {got['counts']} ({got['reasons']})")
    return migrated, applied


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def figures(results: Sequence[Measured]) -> Iterator[Figure]:
    """CPU per item for each job and size; each job's growth from the smallest size to each bigger one, and
    the larger of the two jobs' growths under the name without the job (the issue's target: at most 1.15)."""
    limits = f"limits {PER_SECOND}/s {PER_MINUTE}/min, poll {POLL:g} s, processing {PROCESSING:g} s"
    for m in results:
        what = "clips by tus (--no-prefect)" if m.job == "migrate" else "updates (tags), one call each"
        yield Figure(
            f"cpu_per_item_{m.job}_{_k(m.items)}",
            m.per_item_ms,
            "ms",
            f"{m.items} {what}, {TRANSFERS} transfers, {limits}: {m.cpu:.1f} s CPU (user + system, imports "
            f"excluded) in {m.seconds:.1f} s wall = {m.items / m.seconds:.0f} items/s; {m.load}",
        )
    growth: dict[str, list[tuple[str, float]]] = {}
    for job in ("migrate", "apply"):
        runs = sorted((m for m in results if m.job == job), key=lambda m: m.items)
        for big in runs[1:]:
            small = runs[0]
            name = f"cpu_per_item_growth_{_k(small.items)}_to_{_k(big.items)}"
            ratio = big.per_item_ms / small.per_item_ms
            growth.setdefault(name, []).append((job, ratio))
            yield Figure(
                f"{name}_{job}",
                ratio,
                note=f"{job}: {big.per_item_ms:.2f} ms / {small.per_item_ms:.2f} ms CPU per item; 1.0 = flat",
            )
    for name, ratios in growth.items():
        job, worst = max(ratios, key=lambda r: r[1])
        both = ", ".join(f"{j} {r:.2f}" for j, r in ratios)
        yield Figure(name, worst, note=f"the larger of the jobs' growths ({both}); 1.0 = flat")


def _k(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Each size in a fresh workspace of one emulator process (its CPU is not in the figures)."""
    root = cfg.subdir("cpu-per-item")
    data = clip_bytes()
    results: list[Measured] = []
    with EmulatorProcess(root) as emu:
        for items in sizes(cfg.quick):
            load = _load()
            migrated, applied = measure_pair(emu.ctl(), root, data, items)
            after = _load()
            results += [
                dataclasses.replace(m, load=f"{load} before, {after} after") for m in (migrated, applied)
            ]
            print(
                f"  {items}: migrate {migrated.per_item_ms:.2f} ms/item, apply {applied.per_item_ms:.2f}",
                file=sys.stderr,
                flush=True,
            )
    yield from figures(results)

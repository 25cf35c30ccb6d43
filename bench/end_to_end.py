"""End-to-end time of a 300-item migration with timed processing: `videoferry migrate` vs the naive script."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench import naive
from bench.figures import Figure
from bench.ratelog import api_calls, breakdown, earliest, refused
from bench.services import REPO, EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, write_clips, write_inventory
from emulator.control import Workspace


#: Real limits (10/s, 300/min), the spec's 5 s poll interval, 2 s of processing per video. The naive script
#: is sequential, so its time is measured on a few items and multiplied out (see README).
@dataclass(frozen=True)
class Sizes:
    """How big a run is: items migrated by videoferry, items the naive script runs, timings, Prefect runs."""

    items: int
    naive_items: int
    processing: float
    naive_poll: float
    prefect: tuple[bool, ...]


FULL = Sizes(items=300, naive_items=6, processing=2.0, naive_poll=5.0, prefect=(False, True))
QUICK = Sizes(items=5, naive_items=2, processing=0.5, naive_poll=0.5, prefect=(False,))
PER_SECOND, PER_MINUTE = 10, 300
TRANSFERS = 4


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "videoferry"
    return [str(script)] if script.exists() else [sys.executable, "-m", "flows.cli"]


def videoferry_migrate(ws: Workspace, inventory: Path, ledger: Path, workdir: Path, prefect: bool) -> float:
    """Run `videoferry migrate` as a user would (a new process, default options but the ledger path)."""
    env = {
        **os.environ,
        "VIDEOFERRY_API_URL": ws.base_url,
        "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
        "VIDEOFERRY_TOKEN": ws.token,
        "PREFECT_HOME": str(workdir / "prefect-home"),
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    }
    env.pop("PREFECT_API_URL", None)
    command = [
        *_cli(),
        "migrate",
        str(inventory),
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(ledger),
        "--transfers",
        str(TRANSFERS),
        "--prefect" if prefect else "--no-prefect",
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"videoferry migrate exited {proc.returncode}: {' | '.join(tail)}")
    return elapsed


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate N real clips with `videoferry migrate` (plain, then through Prefect), then run the naive script
    on a few more clips in another workspace with the same settings and multiply its time out to N.
    """
    size = QUICK if cfg.quick else FULL
    items, naive_items, processing, naive_poll = (
        size.items,
        size.naive_items,
        size.processing,
        size.naive_poll,
    )
    root = cfg.subdir("end-to-end")
    data = clip_bytes()
    clips = write_clips(root / "clips", items, data)
    inventory = write_inventory(root / "inventory.csv", [str(p) for p in clips])
    # The fewest seconds any client needs: N creates and one list per 100 videos inside the limits, the last
    # list after the last video's processing.
    floor = max(
        earliest(items + math.ceil(items / 100), PER_SECOND, PER_MINUTE),
        earliest(items, PER_SECOND, PER_MINUTE) + processing,
    )
    results: dict[bool, float] = {}
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        for prefect in size.prefect:
            ws = ctl.create_workspace(processing="timed", processing_seconds=processing)
            name = "prefect" if prefect else "plain"
            seconds = videoferry_migrate(ws, inventory, root / f"{name}.db", root, prefect)
            results[prefect] = seconds
            entries = ctl.requests(ws.workspace_id)
            calls = api_calls(entries)
            how = "through Prefect (the CLI default)" if prefect else "--no-prefect"
            yield Figure(
                f"e2e_{items}_videoferry{'_prefect' if prefect else ''}_seconds",
                seconds,
                "s",
                f"`videoferry migrate` {how}, {TRANSFERS} transfers, limits {PER_SECOND}/s {PER_MINUTE}/min, "
                f"poll 5 s, processing {processing:g} s; floor {floor:.1f} s; {len(calls)} API calls "
                f"({breakdown(calls)}), {refused(entries)} 429s",
            )
        ws = ctl.create_workspace(processing="timed", processing_seconds=processing)
        sample = write_clips(root / "naive", naive_items, data, prefix="naive")
        started = time.perf_counter()
        statuses = naive.migrate(sample, ws.base_url, ws.upload_url, ws.token, ws.project_id, naive_poll)
        per_item = (time.perf_counter() - started) / naive_items
    if any(s != "done" for s in statuses.values()):
        raise RuntimeError(f"the naive script ended with {statuses}")
    naive_total = per_item * items
    yield Figure(
        f"e2e_{items}_naive_seconds",
        naive_total,
        "s",
        f"bench/naive.py: one POST, GET every {naive_poll:g} s until done, next; measured on {naive_items} "
        f"items "
        f"({per_item:.2f} s each) x {items} (it is strictly sequential)",
    )
    plain = results[False]
    yield Figure(
        "e2e_naive_vs_videoferry",
        naive_total / plain,
        note="naive seconds / videoferry --no-prefect seconds; above 1 = videoferry faster",
    )
    yield Figure(
        "e2e_videoferry_vs_floor",
        plain / floor,
        note=f"videoferry --no-prefect seconds / {floor:.1f} s floor set by the limits; 1.0 = at the floor",
    )

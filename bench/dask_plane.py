"""The Dask data plane: tus bytes sent by 1 and 2 local Dask worker processes against the in-process path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import MIB, BenchConfig, fit_size, settings_for, write_inventory, write_random_file
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import run_migration

FILES = 4
FULL_SIZE = 64 * MIB
QUICK_SIZE = 4 * MIB
#: Client-side limits high enough never to bind (the workspace has its limits switched off).
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000
#: What one token admits: the published 300 API calls a minute, over the calls a video needs at the least
#: with statuses by polling (its create and a hundredth of a list call): 297 videos a minute. The measured
#: calls per video (`api_calls`) are a little above that; the model takes the floor, not one run's figure.
PER_MINUTE, CALLS_PER_VIDEO = 300, 1 + 1 / 100
VIDEOS_PER_MINUTE = PER_MINUTE / CALLS_PER_VIDEO


def _migrate(emu: EmulatorProcess, files: list[Path], root: Path, label: str, dask: str | None) -> float:
    """Migrate the files (4 at once, by tus) into a fresh workspace; MiB/s from first create to last byte."""
    ws = emu.ctl().create_workspace(processing="manual", rate_per_second=0, rate_per_minute=0)
    inventory = write_inventory(
        root / f"{label}.csv", [str(p) for p in files], [f"{label}-{p.stem}" for p in files]
    )
    opts = MigrateOptions(
        inventory=str(inventory),
        parent_id=ws.project_id,
        ledger=str(root / f"{label}.db"),
        transfers=FILES,
        via="tus",
        wait_timeout=0.0,  # random bytes never become playable: stop once they are in
        dask=dask,
    )
    started = time.perf_counter()
    outcome = run_migration(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    wall = time.perf_counter() - started
    total = sum(p.stat().st_size for p in files)
    if int(outcome.summary.get("bytes_uploaded") or 0) != total:
        raise RuntimeError(f"{label}: upload incomplete: {outcome.reasons}")
    return total / MIB / wall


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """In-process, then a LocalCluster of 1 and of 2 worker processes, each on the same files and emulator."""
    from distributed import LocalCluster

    root = cfg.subdir("dask")
    size = fit_size(
        cfg, QUICK_SIZE if cfg.quick else FULL_SIZE, copies=FILES, what="dask files", minimum=QUICK_SIZE
    )
    files = [write_random_file(root / f"f{i}.bin", size) for i in range(FILES)]
    rates: dict[str, float] = {}
    try:
        with EmulatorProcess(root) as emu:
            rates["in_process"] = _migrate(emu, files, root, "local", None)
            for workers in (1, 2):
                with LocalCluster(
                    n_workers=workers,
                    threads_per_worker=FILES // workers,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                ) as cluster:
                    rates[f"{workers}"] = _migrate(
                        emu, files, root, f"dask{workers}", cluster.scheduler_address
                    )
    finally:
        for path in files:
            path.unlink(missing_ok=True)
    what = f"{FILES} files of {size / MIB:.0f} MiB by tus, {FILES} at once, to the emulator on loopback"
    yield Figure("inprocess_bytes_throughput", rates["in_process"], "MiB/s", f"{what}, no Dask (whole run)")
    for workers in (1, 2):
        rate = rates[f"{workers}"]
        yield Figure(
            f"dask_{workers}_worker{'s' * (workers > 1)}_throughput",
            rate,
            "MiB/s",
            f"{what}, bytes sent by {workers} local Dask worker process{'es' * (workers > 1)}",
        )
        yield Figure(
            f"dask_{workers}_vs_inprocess",
            rate / rates["in_process"],
            note="Dask data plane / in-process; on 2 shared cores the point is the cost, not the scale",
        )
    per_worker = rates["1"]
    need = VIDEOS_PER_MINUTE * 1024 / 60  # MiB/s of 1 GiB videos at one token's pace
    yield Figure(
        "workers_to_saturate_one_token",
        need / per_worker,
        note=(
            f"1 GiB videos at {VIDEOS_PER_MINUTE:.0f}/min (one token: {PER_MINUTE} calls / "
            f"{CALLS_PER_VIDEO:.2f} per video) need {need:.0f} MiB/s; one worker here"
            f" moved {per_worker:.0f} MiB/s (loopback, one core)"
        ),
    )

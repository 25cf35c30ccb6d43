"""`videoferry backup` into S3 (moto) against boto3 copies of the same link, its peak RSS, and a restore
from the backup both ways: the bytes through videoferry (tus) and the service pulling them (URL import)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.archive_copy import (
    BUCKET,
    _aws_env,
    _empty,
    _recording,
    _s3_client,
    compared,
    copy_memory,
    copy_step_seconds,
    paired_rounds,
    raw_figures,
    raw_way,
    rounds,
    throughput,
)
from bench.figures import Figure
from bench.services import EmulatorProcess, MotoProcess
from bench.workload import MIB, BenchConfig, fit_size, settings_for
from videoferry.connectors.s3_multipart import DEFAULT_IN_FLIGHT
from videoferry.emulator.control import Workspace

#: The video copied for throughput, and the (reference, big) videos of the memory runs.
FULL_SIZE, QUICK_SIZE = 512 * MIB, 16 * MIB
FULL_MEMORY, QUICK_MEMORY = (64 * MIB, 512 * MIB), (4 * MIB, 16 * MIB)
#: The restore: this many videos of this size, backed up to S3 and migrated back into another workspace.
RESTORE_VIDEOS, FULL_RESTORE, QUICK_RESTORE = 4, 32 * MIB, 2 * MIB
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000


def backup_once(ws: Workspace, project: str, size: int, workdir: Path, n: int) -> tuple[float, float]:
    """One run_backup of the project into s3://BUCKET/backup-n/ with a fresh ledger: (seconds of the copy
    step from its intent to its outcome as the ledger journals them, wall seconds of the whole run)."""
    from videoferry.flows.backup.options import BackupOptions
    from videoferry.flows.backup.runner import run_backup

    ledger = workdir / f"backup-{n}.db"
    opts = BackupOptions(project=project, to=f"s3://{BUCKET}/backup-{n}/", ledger=str(ledger), transfers=1)
    started = time.perf_counter()
    outcome = run_backup(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    wall = time.perf_counter() - started
    if outcome.exit_code != 0 or outcome.bytes != size:
        raise RuntimeError(
            f"backup run {n}: exit {outcome.exit_code}, {outcome.bytes} bytes: {outcome.reasons}"
        )
    return copy_step_seconds(ledger), wall


def _throughput(cfg: BenchConfig, emu: EmulatorProcess, ws: Workspace, moto: MotoProcess) -> Iterator[Figure]:
    root = cfg.subdir("backup-throughput")
    size = fit_size(
        cfg, QUICK_SIZE if cfg.quick else FULL_SIZE, copies=4, what="backup video", minimum=QUICK_SIZE
    )
    project, _ = emu.ctl().create_project(ws)
    _, original = _recording(emu, ws, size, "throughput", parent_id=project)
    s3 = _s3_client(moto)
    backed: list[tuple[float, float]] = []
    verified: list[float] = []
    raw: list[float] = []

    def ours(n: int) -> None:
        backed.append(backup_once(ws, project, size, root, n))
        _empty(s3, f"backup-{n}/")

    with _aws_env(moto):
        link = original["download_link"]
        checked = raw_way(s3, link, size, verified, md5=original["md5"])
        paired_rounds(ours, checked, raw_way(s3, link, size, raw))
    del backed[0], verified[0], raw[0]  # the untimed round
    mib = size / MIB
    copies = [t for t, _ in backed]
    yield throughput(
        "backup_throughput",
        mib,
        copies,
        f"{mib:.0f} MiB video by run_backup to s3:// (moto), 8 MiB parts ({DEFAULT_IN_FLIGHT} in flight "
        f"while the download goes on), the copy step's intent -> outcome in the ledger, {rounds(copies)}; "
        f"whole run_backup calls {', '.join(f'{w:.2f}' for _, w in backed)} s",
    )
    yield from raw_figures("backup_", mib, verified, raw)
    yield compared(copies, verified, "backup", against="verified_boto3")
    yield compared(copies, raw, "backup")


def _memory(cfg: BenchConfig, emu: EmulatorProcess, ws: Workspace, moto: MotoProcess) -> Iterator[Figure]:
    root = cfg.subdir("backup-memory")

    def options_for(n: int, size: int) -> dict[str, Any]:
        project, _ = emu.ctl().create_project(ws)  # a project of its own: the run backs up this video only
        _recording(emu, ws, size, f"memory-{n}", parent_id=project)
        return {"project": project, "to": f"s3://{BUCKET}/mem-{n}/", "ledger": str(root / f"mem-{n}.db")}

    yield from copy_memory(cfg, ws, moto, "backup", QUICK_MEMORY if cfg.quick else FULL_MEMORY, options_for)


def _restore_once(emu: EmulatorProcess, inventory: str, via: str, workdir: Path) -> tuple[float, int, int]:
    """Migrate the backup's inventory into a fresh workspace (limits off): (seconds until every video is
    done, bytes sent by videoferry, API calls the service counted)."""
    from videoferry.flows.migrate.options import MigrateOptions
    from videoferry.flows.migrate.runner import run_migration

    other = emu.ctl().create_workspace(processing="immediate", rate_per_second=0, rate_per_minute=0)
    opts = MigrateOptions(
        inventory=inventory,
        parent_id=other.project_id,
        ledger=str(workdir / f"restore-{via}.db"),
        via=via,
        transfers=4,
        poll_interval=5.0,
        wait_timeout=600.0,
    )
    started = time.perf_counter()
    outcome = run_migration(opts, settings_for(other, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    seconds = time.perf_counter() - started
    if outcome.exit_code != 0:
        raise RuntimeError(f"restore by {via}: {outcome.reasons[:3]}")
    calls = sum(1 for r in emu.ctl().requests(other.workspace_id) if r.get("api"))
    return seconds, int(outcome.summary.get("bytes_uploaded") or 0), calls


def _restore(cfg: BenchConfig, emu: EmulatorProcess, ws: Workspace, moto: MotoProcess) -> Iterator[Figure]:
    root = cfg.subdir("backup-restore")
    size = QUICK_RESTORE if cfg.quick else FULL_RESTORE
    project, _ = emu.ctl().create_project(ws)
    for n in range(RESTORE_VIDEOS):
        _recording(emu, ws, size + n * MIB, f"restore-{n}", parent_id=project)
    total = sum(size + n * MIB for n in range(RESTORE_VIDEOS)) / MIB
    with _aws_env(moto):
        from videoferry.flows.backup.options import BackupOptions
        from videoferry.flows.backup.runner import run_backup

        opts = BackupOptions(project=project, to=f"s3://{BUCKET}/restore/", ledger=str(root / "backup.db"))
        backed = run_backup(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
        if backed.exit_code != 0:
            raise RuntimeError(f"restore's backup: {backed.reasons[:3]}")
        inventory = f"s3://{BUCKET}/restore/inventory.csv"
        by_tus = _restore_once(emu, inventory, "tus", root)
        by_url = _restore_once(emu, inventory, "url", root)
    what = f"{RESTORE_VIDEOS} videos, {total:.0f} MiB, from the backup's inventory.csv on s3:// (moto)"
    for via, (seconds, sent, calls) in (("tus", by_tus), ("url", by_url)):
        yield Figure(
            f"restore_{via}_seconds",
            seconds,
            "s",
            f"`migrate s3://.../inventory.csv --via {via}` into another workspace, {what}, to every video "
            f"done: {sent / MIB:.0f} MiB sent by videoferry, {calls} API calls",
        )
    yield Figure(
        "restore_url_vs_tus",
        by_tus[0] / by_url[0],
        note="restore seconds by tus / by URL import (above 1: the URL import is faster); by URL the service "
        "pulls each original from a presigned link and no byte passes through videoferry",
    )


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Back up a big video to moto S3 and copy the same link with raw boto3; peak RSS, small vs big; a
    restore from an S3 backup by tus and by URL import. The videos are the broadcast's real clip padded
    with random bytes (the emulator's `size_bytes` hook), processed to `done`, incompressible."""
    root = cfg.subdir("backup_copy")
    with EmulatorProcess(root) as emu, MotoProcess(root) as moto:
        ws = emu.ctl().create_workspace(processing="immediate", rate_per_second=0, rate_per_minute=0)
        _s3_client(moto).create_bucket(Bucket=BUCKET)
        yield from _throughput(cfg, emu, ws, moto)
        yield from _memory(cfg, emu, ws, moto)
        yield from _restore(cfg, emu, ws, moto)

"""The data plane on a real local Dask cluster (two worker processes on loopback): bytes sent by workers,
exactly once, inside the limits, and a worker killed mid-upload without losing or doubling anything."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.checks import file_md5, rate_figures
from tests.flows.bounds import within
from tests.flows.helpers import options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger

pytestmark = pytest.mark.timeout(300)

MIB = 1024 * 1024


def _rows(clip_factory: Any, n: int) -> list[dict[str, Any]]:
    """n clips of a few MiB each (several tus chunks of 1 MiB)."""
    return [
        {"source": str(clip_factory(4.0, width=640, height=480, name=f"big-{i}.mp4")), "title": f"Big {i}"}
        for i in range(n)
    ]


def _check_exactly_once(
    control: EmulatorControl, ws: Workspace, ledger: Path, rows: list[dict[str, Any]]
) -> None:
    with Ledger.open(ledger, create=False) as book:
        items = book.items()
    assert {i.state for i in items} == {"finished"}
    videos = control.videos(ws)
    assert len(videos) == len(rows)
    md5_of = {i.video_id: file_md5(Path(i.spec.source)) for i in items}
    assert all(v["md5"] == md5_of[v["id"]] for v in videos)
    figures = rate_figures(control, ws)
    assert figures.per_second <= 10 and figures.per_minute <= 300 and figures.refused_429 == 0


def _pushes(cluster: Any) -> tuple[int, int]:
    """Byte transfers (push_bytes tasks) the scheduler started on a worker, and those that finished."""
    prefix = cluster.scheduler.task_prefixes.get("push_bytes")
    counts = {} if prefix is None else prefix.state_counts
    return counts.get("processing", 0), counts.get("memory", 0)


def _upload_requests(control: EmulatorControl, ws: Workspace) -> dict[str, list[dict[str, Any]]]:
    """The requests of each upload address (HEAD and PATCH), oldest first."""
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in control.requests(ws.workspace_id):
        if entry["host"] == "upload" and entry["method"] in ("HEAD", "PATCH"):
            found.setdefault(entry["path"], []).append(entry)
    return found


def _acknowledged(entries: list[dict[str, Any]]) -> int:
    return sum(1 for e in entries if e["method"] == "PATCH" and e["status"] == 204)


def test_workers_send_the_bytes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, cluster: Any
) -> None:
    rows = _rows(clip_factory, 4)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    opts = options(inventory, emu, tmp_path, dask=cluster.scheduler_address, chunk_size=MIB, via="tus")
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    _check_exactly_once(emu_control, emu, tmp_path / "ledger.db", rows)
    assert _pushes(cluster) == (len(rows), len(rows))  # every upload's bytes went through a worker, once


def test_a_worker_killed_mid_upload_is_replaced_and_the_upload_resumes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, cluster: Any
) -> None:
    from distributed import Client

    rows = _rows(clip_factory, 3)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    # Slow upload addresses, so a transfer is still running when its worker is killed.
    emu_control.set_faults(emu, [{"kind": "bandwidth", "path": "^/upload/", "bytes_per_second": 100_000}])
    # Chunks of 64 KiB: several per file, so the worker that takes over resumes from the server's offset.
    opts = options(inventory, emu, tmp_path, dask=cluster.scheduler_address, chunk_size=64 * 1024, via="tus")
    with Client(cluster.scheduler_address, set_as_default=False) as watcher:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            running = pool.submit(run_migration, opts, settings_for(emu))
            deadline = time.monotonic() + 60
            victim = None
            while victim is None and time.monotonic() < deadline and not running.done():
                busy = {addr: keys for addr, keys in watcher.processing().items() if keys}
                if busy:
                    victim = next(iter(busy))
                else:
                    time.sleep(0.2)
            assert victim is not None, "no transfer was seen running on a worker"
            # Every transfer under way has had chunks acknowledged first (a resume must then skip them).
            while not running.done() and time.monotonic() < deadline:
                sent = _upload_requests(emu_control, emu)
                under_way = sum(len(keys) for keys in watcher.processing().values())
                if len(sent) >= under_way and all(_acknowledged(e) >= 2 for e in sent.values()):
                    break
                time.sleep(0.2)
            assert not running.done() and time.monotonic() < deadline, "no transfer sent two chunks in time"
            pids = watcher.run(os.getpid)
            os.kill(pids[victim], signal.SIGKILL)
            outcome = running.result(timeout=240)
    assert outcome.exit_code == 0, outcome.reasons
    emu_control.set_faults(emu, [])
    _check_exactly_once(emu_control, emu, tmp_path / "ledger.db", rows)
    started, finished = _pushes(cluster)
    assert finished == len(rows) and started > len(rows)  # the killed worker's transfer ran again elsewhere
    # The transfer taken over asked the address for its offset (a second HEAD, after acknowledged chunks)...
    uploads = _upload_requests(emu_control, emu)
    resumed = [
        path
        for path, entries in uploads.items()
        if any(e["method"] == "HEAD" and _acknowledged(entries[:n]) >= 2 for n, e in enumerate(entries))
    ]
    assert resumed, uploads
    # ... and sent none of the bytes acknowledged before: no PATCH begins before the last acknowledged one
    # did (the service takes a PATCH only at its own offset, so a chunk it took ends past that; the same
    # offset again only follows a chunk the kill cut off before any of its bytes arrived).
    for path, entries in uploads.items():
        patches = [(e["upload_offset"], e["status"]) for e in entries if e["method"] == "PATCH"]
        acknowledged = 0
        for offset, status in patches:
            assert offset >= acknowledged, (path, patches)
            acknowledged = offset if status == 204 else acknowledged


def test_a_worker_waits_on_a_silent_upload_address_no_longer_than_the_runs_bound(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    cluster: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every PATCH answers 30 s late (a worker's own timeout is 60 s): with the run's bound of 3 s, the worker
    gives up once the address has answered nothing for 3 s, and the item says so."""
    monkeypatch.setenv("VIDEOFERRY_OUTAGE_SECONDS", "3")
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 30_000, "path": "^/upload/"}])
    inventory = write_inventory(tmp_path / "inv.csv", _rows(clip_factory, 1))
    opts = options(inventory, emu, tmp_path, dask=cluster.scheduler_address, chunk_size=MIB, via="tus")
    outcome = within(lambda: run_migration(opts, settings_for(emu)), what="the migration")
    assert outcome.exit_code == 1, outcome.reasons
    said = "\n".join(outcome.log_lines())
    assert "the service has not answered for 3 s, its bound VIDEOFERRY_OUTAGE_SECONDS being 3 s" in said, said

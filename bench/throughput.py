"""tus throughput of a videoferry migration against one raw single-request upload of the same file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import MIB, BenchConfig, fit_size, settings_for, write_inventory, write_random_file
from connectors.client import VideoClient
from connectors.sources import open_source
from connectors.tus import TusUpload
from emulator.control import Workspace
from flows.options import MigrateOptions
from flows.runner import run_migration

FULL_SIZE = 1024 * MIB
QUICK_SIZE = 16 * MIB
#: Client-side limits high enough never to bind (the workspace has its limits switched off).
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000
#: Each way runs this often, alternating (raw, connector, tus, raw, ...); the best run of each is reported.
ROUNDS = 2


def raw_upload(ws: Workspace, path: Path) -> float:
    """POST the whole file in one request to /v2/video (streamed from disk); returns the seconds it took."""
    size = path.stat().st_size

    def body() -> Iterator[bytes]:
        with open(path, "rb") as f:
            while block := f.read(MIB):
                yield block

    headers = {
        "Authorization": f"Bearer {ws.token}",
        "X-Parent-ID": ws.project_id,
        "X-Video-Title": path.stem,
        "X-File-Name": path.name,
        "Content-Type": "application/octet-stream",
        "Content-Length": str(size),
    }
    with httpx.Client(timeout=httpx.Timeout(600.0, connect=10.0)) as http:
        started = time.perf_counter()
        response = http.post(f"{ws.upload_url}/v2/video", content=body(), headers=headers)
        elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def connector_upload(ws: Workspace, path: Path) -> float:
    """The tus connector alone (client.uploads.init + TusUpload.upload, 8 MiB chunks, no ledger)."""
    client = VideoClient.from_settings(settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    try:
        session = client.uploads.init(
            parent_id=ws.project_id, title=f"{path.stem}-connector", filesize=path.stat().st_size
        )
        with TusUpload() as tus:
            started = time.perf_counter()
            tus.upload(session.endpoint, open_source(str(path)))
            return time.perf_counter() - started
    finally:
        client.close()


def tus_upload(ws: Workspace, path: Path, workdir: Path, n: int) -> tuple[float, float]:
    """Migrate the file as one tus item (run_migration, default 8 MiB chunks), stopping after the upload.

    Returns (seconds from the create intent to the upload's completion as the ledger recorded them,
    wall seconds of the whole run_migration call).
    """
    inventory = write_inventory(workdir / f"tus-{n}.csv", [str(path)], [f"{path.stem}-{n}"])
    opts = MigrateOptions(
        inventory=str(inventory),
        parent_id=ws.project_id,
        ledger=str(workdir / f"tus-{n}.db"),
        transfers=1,
        via="tus",
        wait_timeout=0.0,  # the video never becomes playable (random bytes): stop once the bytes are in
    )
    started = time.perf_counter()
    outcome = run_migration(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    wall = time.perf_counter() - started
    summary = outcome.summary
    if int(summary.get("bytes_uploaded") or 0) != path.stat().st_size:
        raise RuntimeError(f"tus upload incomplete: {outcome.reasons}")
    rate = summary.get("throughput_bytes_per_second")
    transfer = path.stat().st_size / float(rate) if rate else wall
    return transfer, wall


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Alternate raw, connector-only and run_migration tus uploads of one random file to the same emulator;
    report the best of each.
    """
    root = cfg.subdir("throughput")
    wanted = QUICK_SIZE if cfg.quick else FULL_SIZE
    size = fit_size(cfg, wanted, copies=1 + 3 * ROUNDS, what="throughput file", minimum=QUICK_SIZE)
    path = write_random_file(root / "random.bin", size)
    raw: list[float] = []
    bare: list[float] = []
    tus: list[tuple[float, float]] = []
    try:
        with EmulatorProcess(root) as emu:
            # Manual processing: the emulator probes the bytes (random: status error) and does nothing else.
            # Limits off (rate 0 = no window): the API calls around the uploads must not wait on the limits.
            ws = emu.ctl().create_workspace(processing="manual", rate_per_second=0, rate_per_minute=0)
            for n in range(ROUNDS):
                raw.append(raw_upload(ws, path))
                bare.append(connector_upload(ws, path))
                tus.append(tus_upload(ws, path, root, n))
    finally:
        path.unlink(missing_ok=True)
    mib = size / MIB
    best_raw = mib / min(raw)
    best_tus = mib / min(t for t, _ in tus)
    walls = ", ".join(f"{w:.2f}" for _, w in tus)
    yield Figure(
        "raw_single_request_throughput",
        best_raw,
        "MiB/s",
        f"{mib:.0f} MiB in one POST /v2/video, best of {ROUNDS}: {', '.join(f'{t:.2f}' for t in raw)} s",
    )
    yield Figure(
        "tus_throughput",
        best_tus,
        "MiB/s",
        f"{mib:.0f} MiB by run_migration --via tus, 8 MiB chunks, create intent -> uploaded, "
        f"best of {ROUNDS}; "
        f"whole run_migration calls {walls} s",
    )
    yield Figure(
        "tus_connector_throughput",
        mib / min(bare),
        "MiB/s",
        f"the tus connector alone (init + TusUpload, no ledger), best of {ROUNDS}: "
        f"{', '.join(f'{t:.2f}' for t in bare)} s",
    )
    yield Figure(
        "tus_vs_raw_throughput",
        best_tus / best_raw,
        note="run_migration tus / raw single request; 1.0 = as fast",
    )

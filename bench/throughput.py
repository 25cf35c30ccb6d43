"""tus throughput of a videoferry migration against one raw single-request upload and tuspy, same file."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import MIB, BenchConfig, fit_size, settings_for, write_inventory, write_random_file
from connectors.client import VideoClient
from connectors.config import DEFAULT_CHUNK_SIZE
from connectors.sources import open_source
from connectors.tus import TusUpload
from emulator.control import EmulatorControl, Workspace
from flows.migrate.options import MigrateOptions
from flows.migrate.runner import run_migration

FULL_SIZE = 1024 * MIB
QUICK_SIZE = 16 * MIB
#: Client-side limits high enough never to bind (the workspace has its limits switched off).
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000
#: Each way runs this often, alternating (raw, connector, tus, tuspy, then the other way round); the best
#: run of each is reported.
ROUNDS = 2
WAYS = ("raw", "connector", "tus", "tuspy")


def _client(ws: Workspace) -> VideoClient:
    return VideoClient.from_settings(settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))


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
    """The tus connector alone (client.uploads.init + TusUpload.upload, default chunks, no ledger)."""
    client = _client(ws)
    try:
        session = client.uploads.init(
            parent_id=ws.project_id, title=f"{path.stem}-connector", filesize=path.stat().st_size
        )
        with TusUpload(chunk_size=DEFAULT_CHUNK_SIZE) as tus:
            started = time.perf_counter()
            tus.upload(session.endpoint, open_source(str(path)))
            return time.perf_counter() - started
    finally:
        client.close()


def tuspy_upload(ws: Workspace, path: Path) -> float:
    """tuspy (an independent tus client: HEAD, then a PATCH per chunk) to an endpoint from init, same chunks.

    Timed from the uploader's creation (its HEAD) to the last chunk's answer, as the connector's upload().
    """
    from tusclient.uploader import Uploader

    client = _client(ws)
    try:
        session = client.uploads.init(
            parent_id=ws.project_id, title=f"{path.stem}-tuspy", filesize=path.stat().st_size
        )
    finally:
        client.close()
    with open(path, "rb") as stream:
        started = time.perf_counter()
        uploader = Uploader(url=session.endpoint, file_stream=stream, chunk_size=DEFAULT_CHUNK_SIZE)
        uploader.upload()
        elapsed = time.perf_counter() - started
    if uploader.offset != path.stat().st_size:
        raise RuntimeError(f"tuspy stopped at {uploader.offset} bytes")
    return elapsed


def tus_upload(ws: Workspace, path: Path, workdir: Path, n: int) -> tuple[float, float]:
    """Migrate the file as one tus item (run_migration, default chunk size), stopping after the upload.

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


def _clear(ctl: EmulatorControl, ws: Workspace) -> None:
    """Delete every video of the workspace with its stored file (not timed).

    The emulator writes each upload to disk: deleted at once, its pages are dropped rather than written
    back while the next upload runs (the disk's writeback would slow whichever way comes next).
    """
    client = _client(ws)
    try:
        for video in ctl.videos(ws):
            client.videos.delete(str(video["id"]))
    finally:
        client.close()


def _seconds(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Alternate raw, connector-only, run_migration and tuspy uploads of one random file to the same
    emulator (the order reversed every other round); report the best of each.
    """
    root = cfg.subdir("throughput")
    wanted = QUICK_SIZE if cfg.quick else FULL_SIZE
    size = fit_size(cfg, wanted, copies=2, what="throughput file", minimum=QUICK_SIZE)
    path = write_random_file(root / "random.bin", size)
    raw: list[float] = []
    bare: list[float] = []
    tuspy: list[float] = []
    tus: list[tuple[float, float]] = []
    try:
        with EmulatorProcess(root) as emu:
            # Manual processing: the emulator probes the bytes (random: status error) and does nothing else.
            # Limits off (rate 0 = no window): the API calls around the uploads must not wait on the limits.
            ctl = emu.ctl()
            ws = ctl.create_workspace(processing="manual", rate_per_second=0, rate_per_minute=0)
            ways: dict[str, Callable[[int], None]] = {
                "raw": lambda n: raw.append(raw_upload(ws, path)),
                "connector": lambda n: bare.append(connector_upload(ws, path)),
                "tus": lambda n: tus.append(tus_upload(ws, path, root, n)),
                "tuspy": lambda n: tuspy.append(tuspy_upload(ws, path)),
            }
            for n in range(ROUNDS):
                for way in WAYS if n % 2 == 0 else WAYS[::-1]:
                    ways[way](n)
                    _clear(ctl, ws)
    finally:
        path.unlink(missing_ok=True)
    mib = size / MIB
    chunks = f"{DEFAULT_CHUNK_SIZE // MIB} MiB chunks"
    best_raw, best_bare, best_tuspy = mib / min(raw), mib / min(bare), mib / min(tuspy)
    best_tus = mib / min(t for t, _ in tus)
    walls = [w for _, w in tus]
    yield Figure(
        "raw_single_request_throughput",
        best_raw,
        "MiB/s",
        f"{mib:.0f} MiB in one POST /v2/video, best of {ROUNDS}: {_seconds(raw)} s",
    )
    yield Figure(
        "tus_throughput",
        best_tus,
        "MiB/s",
        f"{mib:.0f} MiB by run_migration --via tus, {chunks}, create intent -> uploaded, best of {ROUNDS}: "
        f"{_seconds([t for t, _ in tus])} s; whole run_migration calls {_seconds(walls)} s",
    )
    yield Figure(
        "tus_connector_throughput",
        best_bare,
        "MiB/s",
        f"the tus connector alone (init + TusUpload, {chunks}, no ledger), best of {ROUNDS}: "
        f"{_seconds(bare)} s",
    )
    yield Figure(
        "tuspy_throughput",
        best_tuspy,
        "MiB/s",
        f"tuspy Uploader to an endpoint from init, {chunks}, HEAD + PATCHes, best of {ROUNDS}: "
        f"{_seconds(tuspy)} s",
    )
    yield Figure(
        "tus_vs_raw_throughput",
        best_tus / best_raw,
        note=f"run_migration tus / raw single request; connector / raw {best_bare / best_raw:.2f}; "
        "1.0 = as fast",
    )
    yield Figure(
        "tus_vs_tuspy_throughput",
        best_tus / best_tuspy,
        note=f"run_migration tus / tuspy, same chunks; connector / tuspy {best_bare / best_tuspy:.2f}; "
        "above 1 = ours faster",
    )
    yield Figure(
        "tus_whole_run_vs_raw",
        min(raw) / min(walls),
        note=f"raw single request seconds / the whole run_migration call's (best {min(walls):.2f} s: "
        "inventory, ledger, preflight, init, upload, final poll, close); 1.0 = as fast",
    )

"""tus throughput of a videoferry migration against one raw single-request upload and tuspy, same file."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.services import EmulatorProcess
from bench.workload import (
    MIB,
    BenchConfig,
    fit_size,
    free_bytes,
    settings_for,
    write_inventory,
    write_random_file,
)
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.connectors.sources import open_source
from videoferry.connectors.tus import TusUpload
from videoferry.connectors.tus_chunks import MAX_CHUNK_SIZE
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import run_migration

FULL_SIZE = 1024 * MIB
QUICK_SIZE = 16 * MIB
#: Client-side limits high enough never to bind (the workspace has its limits switched off).
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000
#: Each way runs this often, alternating (raw, connector, tus, tuspy, then the other way round). A ratio is
#: taken within each round (the ways of one round ran side by side in time, under the same load) and the
#: median of the rounds is reported with its min and max: best of 2 moved 15-20 % between runs.
ROUNDS, QUICK_ROUNDS = 6, 2
WAYS = ("raw", "connector", "tus", "tuspy")
#: Where the emulator keeps the bytes it receives when there is room: memory (tmpfs), so that the disk's
#: writeback of earlier uploads is not in any way's seconds (it moved single rounds by 5 % and more).
MEMORY_DIR = Path("/dev/shm")
#: The emulator's CPU seconds in an upload's call over the upload's seconds from which it set the pace.
SERVER_BOUND = 0.9


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
    """The tus connector alone (client.uploads.create_video + TusUpload.upload, default chunks, no ledger)."""
    client = _client(ws)
    try:
        session = client.uploads.create_video(
            parent_id=ws.project_id, title=f"{path.stem}-connector", filesize=path.stat().st_size
        )
        with TusUpload(chunk_size=DEFAULT_CHUNK_SIZE) as tus:
            started = time.perf_counter()
            tus.upload(session.endpoint, open_source(str(path)))
            return time.perf_counter() - started
    finally:
        client.close()


def tuspy_upload(ws: Workspace, path: Path) -> float:
    """tuspy (an independent tus client: HEAD, then a PATCH per chunk) to an endpoint from init, 16 MiB each.

    Timed from the uploader's creation (its HEAD) to the last chunk's answer, as the connector's upload().
    """
    from tusclient.uploader import Uploader

    client = _client(ws)
    try:
        session = client.uploads.create_video(
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


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, every thread (Linux /proc; 0.0 where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _seconds(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def _server_bound(server_cpu: dict[str, list[float]], ours: list[float], tuspy: list[float]) -> str:
    """The emulator's CPU seconds in each way's calls against the upload's own seconds: when they are about
    equal, the server's one core set the pace, and no client can be much faster than another that keeps it
    busy."""
    if not server_cpu.get("tus") or not server_cpu.get("tuspy") or not any(server_cpu["tus"]):
        return "the emulator's CPU not read"
    median = statistics.median
    cpu_ours, cpu_theirs = median(server_cpu["tus"]), median(server_cpu["tuspy"])
    said = (
        f"the emulator's CPU seconds in each call (median): ours {cpu_ours:.2f} (the upload "
        f"{median(ours):.2f} s), tuspy's {cpu_theirs:.2f} ({median(tuspy):.2f} s)"
    )
    if min(cpu_ours / median(ours), cpu_theirs / median(tuspy)) >= SERVER_BOUND:
        said += ": the server's core set the pace of both"
    return said


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of the values."""
    return min(values), statistics.median(values), max(values)


def _spread(values: list[float]) -> str:
    low, mid, high = spread(values)
    return f"min {low:.2f} / median {mid:.2f} / max {high:.2f}"


@contextmanager
def pinned(emulator_pid: int) -> Iterator[str]:
    """This process on the first core and every thread of the emulator on the second, for the rounds (a
    description for the notes): on 2 cores the scheduler moving both between them spread the rounds of one
    way by 8 % and more; pinned, raw against raw held within 3 % (bench/README.md, throughput). Nothing is
    pinned with fewer than 2 cores or without sched_setaffinity."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if len(cores) < 2:
        yield "not pinned (fewer than 2 cores)"
        return
    ours, theirs = cores[0], cores[1]
    before = os.sched_getaffinity(0)
    try:
        for task in Path(f"/proc/{emulator_pid}/task").iterdir():
            os.sched_setaffinity(int(task.name), {theirs})  # threads it starts later inherit the core
        os.sched_setaffinity(0, {ours})  # threads this process starts later (the run's) inherit it too
        yield f"this process pinned to core {ours}, the emulator to core {theirs}"
    finally:
        os.sched_setaffinity(0, before)


def emulator_dir(cfg: BenchConfig, root: Path, size: int) -> tuple[Path, str]:
    """Where the emulator keeps the uploads: a fresh directory in /dev/shm when it holds two copies of the
    file and 2 GiB more, else `root` (on disk, said in a note); and the words for the figures' notes."""
    if MEMORY_DIR.is_dir() and free_bytes(MEMORY_DIR) >= 2 * size + 2048 * MIB:
        return Path(
            tempfile.mkdtemp(prefix="videoferry-throughput-", dir=MEMORY_DIR)
        ), "the emulator's store in memory"
    cfg.note(f"throughput: {MEMORY_DIR} has no room for two copies of the file; the emulator stores on disk")
    return root, "the emulator's store on disk"


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Alternate raw, connector-only, run_migration and tuspy uploads of one random file to the same
    emulator (the order reversed every other round); report each way's median and the median of the
    per-round ratios with their spread.
    """
    root = cfg.subdir("throughput")
    wanted = QUICK_SIZE if cfg.quick else FULL_SIZE
    rounds = QUICK_ROUNDS if cfg.quick else ROUNDS
    size = fit_size(cfg, wanted, copies=2, what="throughput file", minimum=QUICK_SIZE)
    path = write_random_file(root / "random.bin", size)
    raw: list[float] = []
    bare: list[float] = []
    tuspy: list[float] = []
    tus: list[tuple[float, float]] = []
    #: The emulator's CPU seconds in each way's calls (the upload and its init; the clearing is not in them).
    server_cpu: dict[str, list[float]] = {}
    placed = "not pinned"
    load = os.getloadavg()
    store, stored = emulator_dir(cfg, root, size)
    try:
        with EmulatorProcess(store) as emu:
            # Manual processing: the emulator probes the bytes (random: status error) and does nothing else.
            # Limits off (rate 0 = no window): the API calls around the uploads must not wait on the limits.
            ctl = emu.ctl()
            ws = ctl.create_workspace(processing="manual", rate_per_second=0, rate_per_minute=0)
            # Not timed: the first upload into a fresh emulator took a second more than the others (its
            # first pages and code paths), which put round 0's first way alone at 1.4 x its median.
            for warm in (lambda: raw_upload(ws, path), lambda: connector_upload(ws, path)):
                warm()
                _clear(ctl, ws)
            ways: dict[str, Callable[[int], None]] = {
                "raw": lambda n: raw.append(raw_upload(ws, path)),
                "connector": lambda n: bare.append(connector_upload(ws, path)),
                "tus": lambda n: tus.append(tus_upload(ws, path, root, n)),
                "tuspy": lambda n: tuspy.append(tuspy_upload(ws, path)),
            }
            with pinned(emu.pid) as placed:
                for n in range(rounds):
                    for way in WAYS if n % 2 == 0 else WAYS[::-1]:
                        before = process_cpu_seconds(emu.pid)
                        ways[way](n)
                        server_cpu.setdefault(way, []).append(process_cpu_seconds(emu.pid) - before)
                        _clear(ctl, ws)
    finally:
        path.unlink(missing_ok=True)
        if store != root:
            shutil.rmtree(store, ignore_errors=True)
    loads = (
        f"load {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {stored}; rounds after one untimed "
        f"upload each of raw and connector; {placed}"
    )
    mib = size / MIB
    chunks = f"chunks from {DEFAULT_CHUNK_SIZE // MIB} MiB doubling up to {MAX_CHUNK_SIZE // MIB} MiB"
    moved = [t for t, _ in tus]
    walls = [w for _, w in tus]
    median = statistics.median
    of = f"median of {rounds} interleaved rounds"
    yield Figure(
        "raw_single_request_throughput",
        mib / median(raw),
        "MiB/s",
        f"{mib:.0f} MiB in one POST /v2/video, {of}: {_seconds(raw)} s; {loads}",
        tuple(mib / t for t in raw),
    )
    yield Figure(
        "tus_throughput",
        mib / median(moved),
        "MiB/s",
        f"{mib:.0f} MiB by run_migration --via tus, {chunks}, create intent -> uploaded, {of}: "
        f"{_seconds(moved)} s; whole run_migration calls {_seconds(walls)} s",
        tuple(mib / t for t in moved),
    )
    yield Figure(
        "tus_connector_throughput",
        mib / median(bare),
        "MiB/s",
        f"the tus connector alone (init + TusUpload, {chunks}, no ledger), {of}: {_seconds(bare)} s",
        tuple(mib / t for t in bare),
    )
    yield Figure(
        "tuspy_throughput",
        mib / median(tuspy),
        "MiB/s",
        f"tuspy Uploader to an endpoint from init, {DEFAULT_CHUNK_SIZE // MIB} MiB chunks, HEAD + PATCHes, "
        f"{of}: {_seconds(tuspy)} s",
        tuple(mib / t for t in tuspy),
    )
    # Throughput ratios per round: the other way's seconds / ours (above 1 = ours faster than that way).
    vs_raw = [r / t for r, t in zip(raw, moved, strict=True)]
    bare_vs_raw = [r / b for r, b in zip(raw, bare, strict=True)]
    whole_vs_raw = [r / w for r, w in zip(raw, walls, strict=True)]
    vs_tuspy = [p / t for p, t in zip(tuspy, moved, strict=True)]
    bare_vs_tuspy = [p / b for p, b in zip(tuspy, bare, strict=True)]
    yield Figure(
        "tus_vs_raw_throughput",
        spread(vs_raw)[1],
        note=f"run_migration tus / raw single request, per round: {_spread(vs_raw)}; the connector alone / "
        f"raw {_spread(bare_vs_raw)}; 1.0 = as fast; {loads}",
        rounds=tuple(vs_raw),
    )
    yield Figure(
        "tus_connector_vs_raw_throughput",
        spread(bare_vs_raw)[1],
        note=f"the tus connector alone (no ledger) / raw single request, per round: {_spread(bare_vs_raw)}",
        rounds=tuple(bare_vs_raw),
    )
    yield Figure(
        "tus_vs_tuspy_throughput",
        spread(vs_tuspy)[1],
        note=f"run_migration tus / tuspy (its chunks all our first's size), per round: {_spread(vs_tuspy)}; "
        "connector / tuspy "
        f"{_spread(bare_vs_tuspy)}; above 1 = ours faster; {_server_bound(server_cpu, moved, tuspy)}",
        rounds=tuple(vs_tuspy),
    )
    yield Figure(
        "tus_whole_run_vs_raw",
        spread(whole_vs_raw)[1],
        note=f"raw single request seconds / the whole run_migration call's, per round: "
        f"{_spread(whole_vs_raw)} (inventory, ledger, preflight, init, upload, final poll, close); "
        "1.0 = as fast",
        rounds=tuple(whole_vs_raw),
    )

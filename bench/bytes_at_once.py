"""The bytes at the link's speed: 8 tus transfers at once against 8 raw streams, an S3 object streamed to the
service against S3 GET + a raw upload, and a tus upload resumed after a dropped connection."""

from __future__ import annotations

import concurrent.futures
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from bench.archive_copy import _s3_client
from bench.figures import Figure, with_rounds
from bench.services import EmulatorProcess, MotoProcess
from bench.throughput import _clear, _client, connector_upload, raw_upload
from bench.workload import MIB, BenchConfig, environment, fit_size, write_random_file
from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.connectors.s3 import shared_s3_client
from videoferry.connectors.sources import open_source
from videoferry.connectors.tus import TusUpload
from videoferry.connectors.tus_chunks import MAX_CHUNK_SIZE
from videoferry.emulator.control import Workspace

#: 8 files of 256 MiB at once (the issue's case); --quick: 8 of 8 MiB.
STREAMS, FULL_SIZE, QUICK_SIZE = 8, 256 * MIB, 8 * MIB
#: Rounds of both ways, the order reversed every other round; the ratio is taken within each round.
ROUNDS, QUICK_ROUNDS = 3, 2
#: The resumed upload: first chunk size and file size in first chunks; the connection is cut once, this far
#: into the first PATCH (its body is the first chunk whatever the growth after it: the figure's unit).
RESUME_CHUNK, QUICK_RESUME_CHUNK, RESUME_CHUNKS, CUT_AT = 16 * MIB, 1 * MIB, 4, 0.5


def at_once(upload: Callable[[Workspace, Path], float], ws: Workspace, path: Path) -> float:
    """Wall seconds of STREAMS uploads of `path` at once (each in its own thread and connection)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=STREAMS) as pool:
        started = time.perf_counter()
        for future in [pool.submit(upload, ws, path) for _ in range(STREAMS)]:
            future.result()
        return time.perf_counter() - started


class HttpBodies:
    """The body bytes in a stream of HTTP/1.1 requests (each body of its Content-Length; none without one),
    fed as the bytes come."""

    def __init__(self) -> None:
        self._head = b""
        self._body_left = 0

    def feed(self, block: bytes) -> int:
        """The body bytes in `block`."""
        body = 0
        while block:
            if self._body_left:
                taken = min(self._body_left, len(block))
                body += taken
                self._body_left -= taken
                block = block[taken:]
                continue
            self._head += block
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return body
            head, block = self._head[:end], self._head[end + 4 :]
            self._head = b""
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    self._body_left = int(value.strip())
        return body


class CuttingProxy:
    """A TCP relay on 127.0.0.1 to one upload host that counts the body bytes of the requests sent upstream
    (request lines and headers left out: HttpBodies) and closes the first connection once `cut_after` bytes
    have gone up it (a dropped connection in the middle of a PATCH)."""

    def __init__(self, host: str, port: int, cut_after: int) -> None:
        self.target = (host, port)
        self.cut_after = cut_after
        self.upstream_bytes = 0
        self.cuts = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                first = not self._open
                self._open += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True, first), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, upstream: bool, cut: bool) -> None:
        sent = 0
        bodies = HttpBodies()
        try:
            while block := src.recv(256 * 1024):
                if cut and sent + len(block) > self.cut_after:
                    block = block[: self.cut_after - sent]
                    dst.sendall(block)
                    with self._lock:
                        self.upstream_bytes += bodies.feed(block)
                        self.cuts += 1
                    break
                dst.sendall(block)
                sent += len(block)
                if upstream:
                    with self._lock:
                        self.upstream_bytes += bodies.feed(block)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._open:
                sock.close()


def resumed(ws: Workspace, path: Path, chunk: int) -> tuple[int, int, int]:
    """One tus upload through a CuttingProxy that drops its first connection mid-chunk; (bytes sent upstream,
    the file's size, the connection cuts). The connector resumes from the server's offset (HEAD)."""
    client = _client(ws)
    try:
        session = client.uploads.create_video(
            parent_id=ws.project_id, title="resumed", filesize=path.stat().st_size
        )
    finally:
        client.close()
    parts = urlsplit(session.endpoint)
    proxy = CuttingProxy(parts.hostname or "127.0.0.1", parts.port or 80, int(chunk * CUT_AT))
    try:
        endpoint = urlunsplit(parts._replace(netloc=f"127.0.0.1:{proxy.port}"))
        with TusUpload(chunk_size=chunk, initial_wait=0.1, max_wait=0.5) as tus:
            done = tus.upload(endpoint, open_source(str(path)), fresh_filesize=path.stat().st_size)
        if done != path.stat().st_size:
            raise RuntimeError(f"the resumed upload ended at {done} of {path.stat().st_size} bytes")
        return proxy.upstream_bytes, done, proxy.cuts
    finally:
        proxy.close()


#: The S3 object's bucket in moto.
BUCKET = "bench-bytes"


def s3_raw(ws: Workspace, moto: MotoProcess, key: str, size: int) -> float:
    """boto3's GET of the object, its body streamed into one POST /v2/video (httpx, 1 MiB reads): seconds."""
    s3 = _s3_client(moto)
    headers = {
        "Authorization": f"Bearer {ws.token}",
        "X-Parent-ID": ws.project_id,
        "X-Video-Title": f"{key}-raw",
        "X-File-Name": key,
        "Content-Type": "application/octet-stream",
        "Content-Length": str(size),
    }
    with httpx.Client(timeout=httpx.Timeout(600.0, connect=10.0)) as http:
        started = time.perf_counter()
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
        response = http.post(f"{ws.upload_url}/v2/video", content=body.iter_chunks(MIB), headers=headers)
        elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def s3_tus(ws: Workspace, moto: MotoProcess, key: str, size: int, chunk: int) -> tuple[float, int]:
    """The tus connector (init + TusUpload, `chunk` bytes a PATCH) with the S3 object as its source, opened as
    a migration opens one (connectors.sources.open_source): seconds from the source's opening to the end,
    and the GETs of the object it sent (boto3's before-call event on the source's own client)."""
    client = _client(ws)
    try:
        session = client.uploads.create_video(parent_id=ws.project_id, title=f"{key}-tus", filesize=size)
    finally:
        client.close()
    gets = [0]

    def count(**_: object) -> None:
        gets[0] += 1

    with environment(moto.env), TusUpload(chunk_size=chunk) as tus:
        shared_s3_client()  # built before the clock starts, as s3_raw's client is (a run builds it once)
        started = time.perf_counter()
        source = open_source(f"s3://{BUCKET}/{key}")
        events = source.client.meta.events  # type: ignore[attr-defined]
        events.register("before-call.s3.GetObject", count, unique_id="bench-s3-gets")
        try:
            tus.upload(session.endpoint, source, fresh_filesize=size)
            return time.perf_counter() - started, gets[0]
        finally:
            events.unregister("before-call.s3.GetObject", unique_id="bench-s3-gets")


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """STREAMS raw single requests at once against STREAMS tus connector uploads at once, same file, rounds
    alternating; then one tus upload resumed after a cut connection."""
    root = cfg.subdir("bytes-at-once")
    wanted = QUICK_SIZE if cfg.quick else FULL_SIZE
    rounds = QUICK_ROUNDS if cfg.quick else ROUNDS
    # The emulator stores every upload: STREAMS copies on disk at a time, and the source file.
    size = fit_size(cfg, wanted, copies=STREAMS + 1, what="bytes_at_once file", minimum=QUICK_SIZE)
    path = write_random_file(root / "random.bin", size)
    chunk = QUICK_RESUME_CHUNK if cfg.quick else RESUME_CHUNK
    small = write_random_file(root / "resume.bin", chunk * RESUME_CHUNKS)
    raw: list[float] = []
    tus: list[float] = []
    s3_get: list[float] = []
    s3_stream: list[float] = []
    s3_gets: list[int] = []
    #: The S3 leg's tus chunk: the default (16 MiB); --quick: 1 MiB, so its 8 MiB object is read in 8 chunks.
    s3_chunk = QUICK_RESUME_CHUNK if cfg.quick else DEFAULT_CHUNK_SIZE
    try:
        with EmulatorProcess(root) as emu:
            ctl = emu.ctl()
            ws = ctl.create_workspace(processing="manual", rate_per_second=0, rate_per_minute=0)
            ways = {"raw": (raw, raw_upload), "tus": (tus, connector_upload)}
            for n in range(rounds):
                for way in ("raw", "tus") if n % 2 == 0 else ("tus", "raw"):
                    times, upload = ways[way]
                    times.append(at_once(upload, ws, path))
                    _clear(ctl, ws)
            began = time.time()
            sent, length, cuts = resumed(ws, small, chunk)
            steps = ", ".join(
                f"{r['method']}{'' if r['upload_offset'] is None else '@' + str(r['upload_offset'])} "
                f"{'cut' if r['dropped'] else r['status']}"
                for r in ctl.requests(ws.workspace_id, since=began)
                if r["path"].startswith("/upload/")
            )
            with MotoProcess(root) as moto:
                s3 = _s3_client(moto)
                s3.create_bucket(Bucket=BUCKET)
                s3.upload_file(str(path), BUCKET, "object.bin")
                path.unlink()
                # One untimed transfer of each way first: the first after the object was written ran 0.3-0.4 s
                # (a quarter) slower, whichever way went first (bench/README.md, bytes_at_once).
                s3_raw(ws, moto, "object.bin", size)
                _clear(ctl, ws)
                s3_tus(ws, moto, "object.bin", size, s3_chunk)
                _clear(ctl, ws)
                for n in range(rounds):
                    for way in ("raw", "tus") if n % 2 == 0 else ("tus", "raw"):
                        if way == "raw":
                            s3_get.append(s3_raw(ws, moto, "object.bin", size))
                        else:
                            seconds, gets = s3_tus(ws, moto, "object.bin", size, s3_chunk)
                            s3_stream.append(seconds)
                            s3_gets.append(gets)
                        _clear(ctl, ws)
    finally:
        path.unlink(missing_ok=True)
        small.unlink(missing_ok=True)
    total = STREAMS * size / MIB
    what = f"{STREAMS} files of {size / MIB:.0f} MiB at once to the same upload host"
    yield with_rounds(
        f"raw_{STREAMS}_throughput",
        [total / t for t in raw],
        "MiB/s",
        f"{what}, each one POST /v2/video streamed from disk; aggregate, median of {rounds} rounds: "
        f"{', '.join(f'{t:.2f}' for t in raw)} s",
    )
    yield with_rounds(
        f"tus_{STREAMS}_throughput",
        [total / t for t in tus],
        "MiB/s",
        f"{what}, each by the tus connector (init + TusUpload, chunks from 16 MiB doubling up to 128 MiB); "
        f"aggregate, median of {rounds} "
        f"rounds: {', '.join(f'{t:.2f}' for t in tus)} s",
    )
    yield with_rounds(
        f"tus_{STREAMS}_vs_raw_{STREAMS}",
        [r / t for r, t in zip(raw, tus, strict=True)],
        note=f"aggregate throughput of {STREAMS} tus transfers / {STREAMS} raw streams at once, within each "
        f"round (raw seconds / tus seconds); medians {statistics.median(raw):.2f} s and "
        f"{statistics.median(tus):.2f} s; 1.0 = as fast",
    )
    resent = max(0, sent - length)
    yield Figure(
        "tus_resume_resent_chunks",
        resent / chunk,
        note=f"a {length / MIB:.0f} MiB tus upload (a first chunk of {chunk / MIB:.0f} MiB, the unit) whose "
        f"connection was cut {CUT_AT:g} chunks in, in its first PATCH ({cuts} cut): {sent} body bytes went "
        "up (request lines and headers left out) "
        f"for {length}, {resent} sent again = {resent / chunk:.3f} chunks; at most 1 chunk = resumed from "
        f"the server's offset; the upload host saw {steps}",
    )
    one = f"one {size / MIB:.0f} MiB object in moto's S3 on loopback to the upload host"
    yield with_rounds(
        "s3_stream_vs_get_upload",
        [r / t for r, t in zip(s3_get, s3_stream, strict=True)],
        note=f"{one}: the tus connector streaming from s3:// (chunks from {s3_chunk / MIB:g} MiB doubling up "
        f"to {MAX_CHUNK_SIZE / MIB:g} MiB; GETs of the object per upload: {', '.join(map(str, s3_gets))}) / "
        "boto3 GET "
        f"streamed into one POST /v2/video, within each of {rounds} alternating rounds after one untimed "
        "transfer of each way (raw seconds / ours); "
        f"seconds {', '.join(f'{t:.2f}' for t in s3_stream)} and {', '.join(f'{t:.2f}' for t in s3_get)}; "
        "1.0 = as fast",
    )

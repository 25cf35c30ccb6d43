"""`videoferry archive` into S3 (moto) against boto3 copies of one link (md5 checked or not); peak RSS."""

from __future__ import annotations

import hashlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import httpx

from bench.child import measure
from bench.figures import Figure
from bench.services import EmulatorProcess, MotoProcess
from bench.workload import MIB, BenchConfig, environment, fit_size, settings_for
from videoferry.connectors.s3_multipart import DEFAULT_IN_FLIGHT, DEFAULT_PART_SIZE
from videoferry.emulator.control import Workspace

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

#: The recording copied for throughput, and the (reference, big) recordings of the memory runs.
FULL_SIZE, QUICK_SIZE = 512 * MIB, 16 * MIB
FULL_MEMORY, QUICK_MEMORY = (64 * MIB, 512 * MIB), (4 * MIB, 16 * MIB)
#: Each way runs this often, in turn (archive, verified raw, raw; then verified raw, raw, archive; ...); the
#: median is reported (on this shared machine one round of the same copy moves by up to 50 %, so a best-of
#: ratio moves by 0.2 from run to run). The raw copy with one thread (a reference, not a target) runs in the
#: first SEQ_ROUNDS rounds only.
ROUNDS, SEQ_ROUNDS = 5, 2
BUCKET = "videoferry-archive-bench"
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000
READY_TIMEOUT = 300.0


def _recording(
    emu: EmulatorProcess, ws: Workspace, size: int, name: str, parent_id: str | None = None
) -> tuple[str, dict[str, Any]]:
    """A live event (in parent_id, else the default project) with one finished broadcast whose recording is
    `size` bytes (the clip, then random bytes) and lands beside the event.

    Uses the broadcast control call's `size_bytes` hook; returns (event id, the recording's original asset)
    once the recording is done.
    """
    event = {"name": name, "type": "recurring", **({"parent_id": parent_id} if parent_id else {})}
    with httpx.Client(base_url=ws.base_url, headers=ws.headers, timeout=120.0) as api:
        answer = api.post("/v2/live/events", json=event)
        answer.raise_for_status()
        event_id = str(answer.json()["data"]["id"])
        api.put(f"/v2/live/events/{event_id}/enable").raise_for_status()  # only enabled events are ingested
        made = emu.ctl().http.post(
            f"/_emulator/live/events/{event_id}/broadcast",
            headers=ws.headers,
            json={"seconds": 10, "size_bytes": size},
            timeout=READY_TIMEOUT,
        )
        made.raise_for_status()
        video_id = made.json()["video_id"]
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            video = api.get(f"/v1/videos/{video_id}").json()["data"]
            if video["status"] == "done":
                break
            if video["status"] in ("error", "aborted") or time.monotonic() > deadline:
                raise RuntimeError(f"the {size // MIB} MiB recording ended {video['status']}")
            time.sleep(0.2)
    original = next(a for a in video["assets"] if a["quality"] == "original")
    if original["file_size"] != size:
        raise RuntimeError(f"recording of {original['file_size']} bytes, not {size}")
    return event_id, original


@contextmanager
def _aws_env(moto: MotoProcess) -> Iterator[None]:
    """moto's fake credentials and endpoint in this process's environment (the in-process archive run)."""
    with environment(moto.env):
        yield


def _s3_client(moto: MotoProcess) -> S3Client:
    import boto3

    client: S3Client = boto3.session.Session().client(
        "s3",
        endpoint_url=moto.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return client


def _empty(s3: S3Client, prefix: str) -> None:
    """Delete what a run left under prefix (moto keeps every byte)."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    for obj in listed:
        s3.delete_object(Bucket=BUCKET, Key=obj["Key"])


def archive_once(ws: Workspace, event_id: str, size: int, workdir: Path, n: int) -> tuple[float, float]:
    """One run_archive of the event into s3://BUCKET/run-n/ with a fresh ledger.

    Returns (seconds of the copy step, from its intent to its outcome as the ledger journals them: the
    video GET for fresh links is before; download, multipart upload, md5 check, HEAD of the stored object
    are in; wall seconds of the whole run_archive call).
    """
    from videoferry.flows.archive.options import ArchiveOptions
    from videoferry.flows.archive.runner import run_archive

    ledger = workdir / f"archive-{n}.db"
    opts = ArchiveOptions(to=f"s3://{BUCKET}/run-{n}/", events=[event_id], ledger=str(ledger), transfers=1)
    started = time.perf_counter()
    outcome = run_archive(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    wall = time.perf_counter() - started
    if outcome.exit_code != 0 or outcome.bytes != size:
        raise RuntimeError(
            f"archive run {n}: exit {outcome.exit_code}, {outcome.bytes} bytes: {outcome.reasons}"
        )
    return copy_step_seconds(ledger), wall


def copy_step_seconds(ledger: Path) -> float:
    """Seconds of the run's one copy step (op key ending `:copy`), from its intent to its outcome as the
    ledger journals them."""
    from videoferry.state.ledger import Ledger

    with Ledger.open(str(ledger), create=False) as reader:
        (op,) = [op for op in reader.ops() if (op.op_key or "").endswith(":copy")]
    assert op.outcome_at is not None
    return (op.outcome_at - op.intent_at).total_seconds()


class _LinkReader:
    """A read()-able view of a streamed httpx body (what upload_fileobj reads parts from); with `md5`, each
    chunk is also hashed as it is read (how a script checks what it copied against the service's md5)."""

    def __init__(self, chunks: Iterator[bytes], md5: Any = None) -> None:
        self._chunks = chunks
        self._left = b""
        self._md5 = md5

    def read(self, size: int = -1) -> bytes:
        out = bytearray(self._left)
        while size < 0 or len(out) < size:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            if self._md5 is not None:
                self._md5.update(chunk)
            out += chunk
        if size < 0:
            self._left = b""
            return bytes(out)
        self._left = bytes(out[size:])
        return bytes(out[:size])


def paired_rounds(*ways: Callable[[int], None]) -> None:
    """One untimed round (index ROUNDS) of each way, then ROUNDS timed ones, the order turning by one each
    round (with ours and raw: ours first in even rounds, raw first in odd ones; with three ways each goes
    first, second and third in turn). Each callable records its own seconds; the untimed round's are dropped
    by the caller.

    The first copy into fresh processes took up to 40 % longer than the rest (botocore loading its S3 model,
    moto's first object of that size), and a copy that always ran right after another way's took the
    other's leftovers (moto freeing a 512 MiB object): both moved one way's rounds, not the other's.
    """
    for way in ways:
        way(ROUNDS)
    for n in range(ROUNDS):
        turn = n % len(ways)
        for way in ways[turn:] + ways[:turn]:
            way(n)


def raw_way(
    s3: S3Client,
    link: str,
    size: int,
    into: list[float],
    one_thread: list[float] | None = None,
    *,
    md5: str | None = None,
) -> Callable[[int], None]:
    """The raw boto3 copy as one way of paired_rounds: round n's seconds (10 threads) into `into`, the object
    deleted after; with `one_thread`, also the copy with one thread in the first SEQ_ROUNDS rounds; with
    `md5`, the copy checks the md5 of what it read against it (the verified raw copy)."""
    tag = "verified" if md5 else "raw"

    def way(n: int) -> None:
        into.append(raw_copy(s3, link, size, f"{tag}-{n}.bin", threads=True, md5=md5))
        _empty(s3, f"{tag}-{n}.bin")
        if one_thread is not None and n < SEQ_ROUNDS:
            one_thread.append(raw_copy(s3, link, size, f"seq-{n}.bin", threads=False, md5=md5))
            _empty(s3, f"seq-{n}.bin")

    return way


def raw_copy(s3: S3Client, link: str, size: int, key: str, *, threads: bool, md5: str | None = None) -> float:
    """GET the same link with httpx (1 MiB chunks) into boto3's upload_fileobj, 8 MiB parts; seconds taken.

    threads=True is boto3's default transfer (10 threads: parts upload while the next ones download),
    threads=False sends one part after the other (the archive's copy before its parts went in flight). With
    `md5` (the service's), every chunk is hashed as it is read and the copy fails unless the digest is that
    md5: the check the archive and the backup make of every copy (raw boto3 alone checks nothing).
    """
    from boto3.s3.transfer import TransferConfig

    config = TransferConfig(
        multipart_threshold=DEFAULT_PART_SIZE, multipart_chunksize=DEFAULT_PART_SIZE, use_threads=threads
    )
    digest = hashlib.md5(usedforsecurity=False) if md5 else None
    with httpx.Client(timeout=httpx.Timeout(600.0, connect=10.0)) as http:
        started = time.perf_counter()
        with http.stream("GET", link) as answer:
            answer.raise_for_status()
            reader = cast(IO[bytes], _LinkReader(answer.iter_bytes(MIB), digest))
            s3.upload_fileobj(reader, BUCKET, key, Config=config)
        stored = s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"]
        elapsed = time.perf_counter() - started
    if stored != size:
        raise RuntimeError(f"raw copy stored {stored} bytes, not {size}")
    if digest is not None and md5 is not None and digest.hexdigest() != md5.lower():
        raise RuntimeError("verified raw copy: the md5 of the bytes read differs from the service's")
    return elapsed


def rounds(times: list[float]) -> str:
    """The median of a way's rounds and every round, for a note: 'median 21.3 s of 5: 20.1, ... s'."""
    each = ", ".join(f"{t:.2f}" for t in times)
    return f"median {statistics.median(times):.2f} s of {len(times)}: {each} s"


#: The two raw copies a copy is compared with: figure suffix -> how the note names it.
AGAINST = {
    "verified_boto3": "boto3 (10 threads) with the md5 checked as ours checks it",
    "raw_boto3": "raw boto3 (10 threads, checking nothing)",
}


def compared(
    ours: list[float], raw: list[float], what: str, extra: str = "", against: str = "raw_boto3"
) -> Figure:
    """`<what>_vs_<against>`: the median of the rounds' own ratios, raw's seconds / ours (the rounds
    alternate, so round n of each ran at about the same time), every round's ratio as its spread; the note
    gives the ratio of the medians, the best-of ratio and the load average of the machine (other processes
    share its 2 cores)."""
    each = [r / o for o, r in zip(ours, raw, strict=True)]
    load = os.getloadavg()
    return Figure(
        f"{what}_vs_{against}",
        statistics.median(each),
        note=f"{what} / {AGAINST[against]}, median of {len(ours)} alternating rounds' ratios; medians' "
        f"ratio {statistics.median(raw) / statistics.median(ours):.3f}; best / best "
        f"{min(raw) / min(ours):.3f}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1, 5, 15 "
        f"min) at the end{extra}; 1.0 = as fast",
        rounds=tuple(each),
    )


def throughput(name: str, mib: float, times: list[float], note: str) -> Figure:
    """`<name>`: MiB/s of a way's median round, every round's MiB/s as its spread."""
    return Figure(name, mib / statistics.median(times), "MiB/s", note, tuple(mib / t for t in times))


def raw_figures(
    prefix: str, mib: float, verified: list[float], raw: list[float], extra: str = ""
) -> list[Figure]:
    """`<prefix>verified_boto3_throughput` and `<prefix>raw_boto3_throughput`: the two raw copies' MiB/s."""
    way = "the same link streamed by httpx into boto3 upload_fileobj"
    return [
        throughput(
            f"{prefix}verified_boto3_throughput",
            mib,
            verified,
            f"{way}, each 1 MiB chunk added to an md5 as it is read and the digest checked against the "
            f"service's md5 at the end, 8 MiB parts, 10 threads, same moto, {rounds(verified)}",
        ),
        throughput(
            f"{prefix}raw_boto3_throughput",
            mib,
            raw,
            f"{way}, 8 MiB parts, 10 threads, same moto, no check of what was copied, {rounds(raw)}{extra}",
        ),
    ]


def _throughput(cfg: BenchConfig, emu: EmulatorProcess, ws: Workspace, moto: MotoProcess) -> Iterator[Figure]:
    root = cfg.subdir("archive-throughput")
    wanted = QUICK_SIZE if cfg.quick else FULL_SIZE
    size = fit_size(cfg, wanted, copies=4, what="archive recording", minimum=QUICK_SIZE)
    event_id, original = _recording(emu, ws, size, "throughput")
    s3 = _s3_client(moto)
    archived: list[tuple[float, float]] = []
    verified: list[float] = []
    raw: list[float] = []
    seq: list[float] = []

    def ours(n: int) -> None:
        archived.append(archive_once(ws, event_id, size, root, n))
        _empty(s3, f"run-{n}/")

    link = original["download_link"]
    with _aws_env(moto):
        paired_rounds(
            ours, raw_way(s3, link, size, verified, md5=original["md5"]), raw_way(s3, link, size, raw, seq)
        )
    del archived[0], verified[0], raw[0]  # the untimed round
    mib = size / MIB
    copies = [t for t, _ in archived]
    yield throughput(
        "archive_throughput",
        mib,
        copies,
        f"{mib:.0f} MiB recording by run_archive to s3:// (moto), 8 MiB parts ({DEFAULT_IN_FLIGHT} in flight "
        f"while the download goes on), the copy step's intent -> outcome in the ledger, {rounds(copies)}; "
        f"whole run_archive calls {', '.join(f'{w:.2f}' for _, w in archived)} s",
    )
    seq_note = f"; one thread (parts in turn): {mib / statistics.median(seq):.0f} MiB/s, {rounds(seq)}"
    yield from raw_figures("", mib, verified, raw, seq_note)
    yield compared(copies, verified, "archive", against="verified_boto3")
    one_thread = statistics.median(seq) / statistics.median(copies)
    yield compared(copies, raw, "archive", f"; archive / raw one thread {one_thread:.2f}")


def copy_memory(
    cfg: BenchConfig,
    ws: Workspace,
    moto: MotoProcess,
    job: str,
    sizes: tuple[int, int],
    options_for: Callable[[int, int], dict[str, Any]],
) -> Iterator[Figure]:
    """Peak RSS of an archive or backup run (`job`) in a child process, with a reference and a big video:
    options_for(n, size) makes the video and answers the run's options (into s3://BUCKET/mem-n/)."""
    env = {
        "VIDEOFERRY_API_URL": ws.base_url,
        "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
        "VIDEOFERRY_TOKEN": ws.token,
        **moto.env,
    }
    s3 = _s3_client(moto)
    results: list[tuple[int, dict[str, Any]]] = []
    for n, wanted in enumerate(sizes):
        size = fit_size(cfg, wanted, copies=3, what=f"{job} memory video", minimum=sizes[0])
        result = measure({"job": job, "options": options_for(n, size)}, env)
        if result["exit_code"] != 0 or result["bytes"] != size:
            raise RuntimeError(f"{job} of {size} bytes: {result}")
        results.append((size, result))
        _empty(s3, f"mem-{n}/")
    (ref_size, ref), (size, big) = results
    peak, ref_peak = big["peak_rss"] / MIB, ref["peak_rss"] / MIB
    yield Figure(
        f"peak_rss_{job}",
        peak,
        "MiB",
        f"{size // MIB} MiB video by run_{job} to s3:// (8 MiB parts, {DEFAULT_IN_FLIGHT} in flight) in a "
        f"child process: {big['peak_rss'] / size:.3f} x the video; after imports "
        f"{big['baseline_rss'] / MIB:.0f} MiB; whole run {size / MIB / big['seconds']:.0f} MiB/s",
    )
    yield Figure(
        f"peak_rss_growth_{job}",
        peak - ref_peak,
        "MiB",
        f"peak with the {size // MIB} MiB video minus peak with a {ref_size // MIB} MiB one "
        f"({ref_peak:.0f} MiB); flat memory = about 0 (the parts in memory are bounded: at most "
        f"{DEFAULT_IN_FLIGHT + 1} x 8 MiB whatever the size)",
    )


def _memory(cfg: BenchConfig, emu: EmulatorProcess, ws: Workspace, moto: MotoProcess) -> Iterator[Figure]:
    root = cfg.subdir("archive-memory")

    def options_for(n: int, size: int) -> dict[str, Any]:
        event_id, _ = _recording(emu, ws, size, f"memory-{n}")
        return {"to": f"s3://{BUCKET}/mem-{n}/", "events": [event_id], "ledger": str(root / f"mem-{n}.db")}

    yield from copy_memory(cfg, ws, moto, "archive", QUICK_MEMORY if cfg.quick else FULL_MEMORY, options_for)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Archive a big recording to moto S3 and copy the same link with raw boto3; then peak RSS, small vs big.

    The recording is the broadcast's real clip padded with random bytes (the emulator's `size_bytes` hook),
    so it is processed to `done` like any recording and nothing on the path compresses it.
    """
    root = cfg.subdir("archive_copy")
    with EmulatorProcess(root) as emu, MotoProcess(root) as moto:
        # Limits off (rate 0 = no window): the few API calls around each copy never wait on the limits.
        ws = emu.ctl().create_workspace(processing="immediate", rate_per_second=0, rate_per_minute=0)
        _s3_client(moto).create_bucket(Bucket=BUCKET)
        yield from _throughput(cfg, emu, ws, moto)
        yield from _memory(cfg, emu, ws, moto)

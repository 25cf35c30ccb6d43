"""tus uploads against the emulator: chunks, progress, resume after a cut body or crash, no secrets."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.models import UploadSession
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.sources import LocalFileSource, SourceError, open_source
from videoferry.connectors.tus import TusEndpointGoneError, TusError, TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace

CHUNK = 32 * 1024


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    retry = RetryPolicy(initial_wait=0.01, max_wait=0.05)
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=retry) as c:
        yield c
    limiter.close()


@pytest.fixture()
def tus() -> Iterator[TusUpload]:
    with TusUpload(chunk_size=CHUNK, max_chunk_size=CHUNK, initial_wait=0.01, max_wait=0.05) as t:
        yield t


@pytest.fixture()
def big_clip(clip_factory) -> Path:  # type: ignore[no-untyped-def]
    """A clip of several chunks."""
    path: Path = clip_factory(4.0, width=320, height=240)
    assert path.stat().st_size > 3 * CHUNK
    return path


def session_for(client: VideoClient, emu: Workspace, source: LocalFileSource) -> UploadSession:
    return client.uploads.create_video(
        parent_id=emu.project_id, title="tus", filesize=source.size, filename=source.name
    )


def stored(control: EmulatorControl, emu: Workspace, video_id: str) -> dict:
    return next(v for v in control.videos(emu) if v["id"] == video_id)


def wait_status(control: EmulatorControl, emu: Workspace, video_id: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = str(stored(control, emu, video_id)["status"])
        if status in ("done", "error", "aborted") or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def holds(control: EmulatorControl, emu: Workspace, video_id: str, path: Path) -> bool:
    """Whether the video reached done holding exactly the file's bytes."""
    done = wait_status(control, emu, video_id) == "done"
    return done and stored(control, emu, video_id)["md5"] == hashlib.md5(path.read_bytes()).hexdigest()


def patches(control: EmulatorControl, emu: Workspace) -> list[dict]:
    return [r for r in control.requests(emu.workspace_id) if r["method"] == "PATCH"]


def test_upload_in_chunks_reports_progress(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    progress: list[int] = []
    assert tus.upload(session.endpoint, source, on_progress=progress.append) == source.size
    assert progress[0] == 0 and progress[-1] == source.size
    assert progress == sorted(progress) and len(progress) == 1 + -(-source.size // CHUNK)
    assert wait_status(emu_control, emu, session.id) == "done"
    assert stored(emu_control, emu, session.id)["file_size"] == source.size
    assert tus.server_status(session.endpoint).offset == source.size


class RecordingSource(LocalFileSource):
    """A local file in small stream blocks that records its reads; it can fail from a given offset."""

    stream_block = CHUNK // 4

    def __init__(self, path: Path, fail_at: int | None = None) -> None:
        super().__init__(path)
        self.reads: list[tuple[int, int]] = []
        self.fail_at = fail_at

    def read_range(self, offset: int, length: int) -> bytes:
        if self.fail_at is not None and offset >= self.fail_at:
            raise SourceError(self.uri, "read failed (test)")
        self.reads.append((offset, length))
        return super().read_range(offset, length)


def test_each_chunk_is_streamed_from_the_source_in_blocks(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = RecordingSource(big_clip)
    session = session_for(client, emu, source)
    assert tus.upload(session.endpoint, source) == source.size
    # Read as it is sent, a block at a time (never a whole chunk in memory), every byte once, in order.
    assert max(length for _, length in source.reads) == CHUNK // 4
    assert [offset for offset, _ in source.reads] == list(range(0, source.size, CHUNK // 4))
    # On the wire nothing changed: one PATCH per chunk, and the service holds the very bytes.
    assert len(patches(emu_control, emu)) == -(-source.size // CHUNK)
    assert holds(emu_control, emu, session.id, big_clip)


def test_a_source_failing_mid_chunk_stops_the_upload_and_a_rerun_resumes(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    broken = RecordingSource(big_clip, fail_at=CHUNK + CHUNK // 2)  # halfway through the second chunk
    session = session_for(client, emu, broken)
    # The error comes out of the send as itself: not taken for a network error (retried, then TusError).
    with pytest.raises(SourceError, match="read failed"):
        tus.upload(session.endpoint, broken)
    # The service keeps what arrived of the broken PATCH (tus); the next upload resumes from its offset.
    progress: list[int] = []
    assert tus.upload(session.endpoint, LocalFileSource(big_clip), on_progress=progress.append) == broken.size
    assert progress[0] >= CHUNK  # at least the first chunk stayed: not a restart from zero
    assert holds(emu_control, emu, session.id, big_clip)


def test_cut_body_is_resumed_from_the_server_offset(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    emu_control.set_faults(emu, [{"kind": "truncate_body", "method": "PATCH", "fraction": 0.5, "times": 1}])
    progress: list[int] = []
    assert tus.upload(session.endpoint, source, on_progress=progress.append) == source.size
    # The cut PATCH kept half a chunk: the next progress report is that odd offset (from HEAD), not a restart.
    assert CHUNK // 2 in progress
    assert progress == sorted(progress)
    methods = [
        r["method"] for r in emu_control.requests(emu.workspace_id) if r["method"] in ("HEAD", "PATCH")
    ]
    assert methods[:4] == ["HEAD", "PATCH", "HEAD", "PATCH"]
    assert wait_status(emu_control, emu, session.id) == "done"
    assert stored(emu_control, emu, session.id)["file_size"] == source.size


def test_fresh_uploader_resumes_after_a_crash(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    recorded: list[int] = []

    class Crash(Exception):
        pass

    def crash_after_two_chunks(offset: int) -> None:
        recorded.append(offset)
        if offset >= 2 * CHUNK:
            raise Crash

    with TusUpload(chunk_size=CHUNK, max_chunk_size=CHUNK) as first, pytest.raises(Crash):
        first.upload(session.endpoint, source, on_progress=crash_after_two_chunks)
    assert recorded[-1] == 2 * CHUNK
    sent_before = len(patches(emu_control, emu))
    with TusUpload(chunk_size=CHUNK, max_chunk_size=CHUNK) as second:
        assert second.upload(session.endpoint, source, offset=recorded[-1]) == source.size
    remaining_chunks = -(-(source.size - 2 * CHUNK) // CHUNK)
    assert len(patches(emu_control, emu)) - sent_before == remaining_chunks
    assert wait_status(emu_control, emu, session.id) == "done"


def test_persistent_5xx_gives_up_with_offset_and_no_secret(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    emu_control.set_faults(emu, [{"kind": "error", "status": 503, "method": "PATCH"}])
    with pytest.raises(TusError) as info:
        tus.upload(session.endpoint, source)
    err = info.value
    assert err.retryable and err.offset == 0 and err.status == 503
    assert len(patches(emu_control, emu)) == tus.max_attempts
    secret = session.endpoint.rsplit("/", 1)[-1]
    assert secret not in str(err) and "upload endpoint" in str(err)


def test_gone_endpoint_and_size_mismatch(
    client: VideoClient, emu: Workspace, tus: TusUpload, big_clip: Path, tmp_path: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    bogus = session.endpoint[:-4] + "zzzz"
    with pytest.raises(TusEndpointGoneError) as gone:
        tus.upload(bogus, source)
    assert not gone.value.retryable and gone.value.status == 404 and "zzzz" not in str(gone.value)
    other = tmp_path / "other.bin"
    other.write_bytes(os.urandom(1000))
    with pytest.raises(TusError) as mismatch:
        tus.upload(session.endpoint, LocalFileSource(other))
    assert not mismatch.value.retryable


def test_endpoint_never_reaches_the_logs(
    client: VideoClient, emu: Workspace, tus: TusUpload, big_clip: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    secret = session.endpoint.rsplit("/", 1)[-1]
    with caplog.at_level(logging.DEBUG):
        tus.upload(session.endpoint, source)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "PATCH" in text  # httpx did log the requests...
    assert secret not in text  # ...without the endpoint


def test_upload_from_s3_object(
    client: VideoClient,
    emu: Workspace,
    emu_control: EmulatorControl,
    tus: TusUpload,
    big_clip: Path,
    s3_server: str,
    s3_bucket: str,
) -> None:
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.put_object(Bucket=s3_bucket, Key="media/clip.mp4", Body=big_clip.read_bytes())
    source = open_source(f"s3://{s3_bucket}/media/clip.mp4", client=s3)
    session = client.uploads.create_video(parent_id=emu.project_id, title="from s3", filesize=source.size)
    assert tus.upload(session.endpoint, source) == source.size
    assert wait_status(emu_control, emu, session.id) == "done"
    assert stored(emu_control, emu, session.id)["file_size"] == big_clip.stat().st_size


def test_plain_post_of_the_whole_file(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    tus.post_whole(session.endpoint, source)
    assert wait_status(emu_control, emu, session.id) == "done"
    assert stored(emu_control, emu, session.id)["file_size"] == source.size


# -- a fresh session (an endpoint its own init just returned): its first PATCH goes with no HEAD before it


class Stop(Exception):
    """Raised from on_progress: the upload stops there, as a run's stop or a crash would end it."""


def stop_after(limit: int) -> Callable[[int], None]:
    def check(offset: int) -> None:
        if offset >= limit:
            raise Stop

    return check


def init(client: VideoClient, emu: Workspace, filesize: int) -> UploadSession:
    return client.uploads.create_video(
        parent_id=emu.project_id, title="fresh", filesize=filesize, filename="f.mp4"
    )


def tus_requests(control: EmulatorControl, emu: Workspace) -> list[tuple[str, int]]:
    """(method, status) of every request to an upload address, oldest first."""
    return [
        (r["method"], r["status"])
        for r in control.requests(emu.workspace_id)
        if r["host"] == "upload" and r["method"] in ("HEAD", "PATCH")
    ]


def test_a_fresh_upload_sends_no_head(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    progress: list[int] = []
    done = tus.upload(session.endpoint, source, on_progress=progress.append, fresh_filesize=source.size)
    assert done == source.size
    chunks = -(-source.size // CHUNK)
    assert tus_requests(emu_control, emu) == [("PATCH", 204)] * chunks
    assert progress[0] == 0 and progress[-1] == source.size and len(progress) == 1 + chunks
    assert holds(emu_control, emu, session.id, big_clip)


def test_a_resumed_upload_still_heads_first(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    assert tus.upload(session.endpoint, source, offset=0) == source.size
    assert tus_requests(emu_control, emu)[0] == ("HEAD", 200)


def test_an_endpoint_holding_bytes_called_fresh_gets_409_heads_and_continues(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    with pytest.raises(Stop):
        tus.upload(session.endpoint, source, on_progress=stop_after(2 * CHUNK), fresh_filesize=source.size)
    before = len(tus_requests(emu_control, emu))
    progress: list[int] = []
    assert tus.upload(session.endpoint, source, on_progress=progress.append, fresh_filesize=source.size) == (
        source.size
    )
    after = tus_requests(emu_control, emu)[before:]
    # The guess at offset 0 is refused without a change (tus: 409), one HEAD, then the rest from 2 chunks.
    assert after[:3] == [("PATCH", 409), ("HEAD", 200), ("PATCH", 204)]
    assert after[3:] == [("PATCH", 204)] * (len(after) - 3)
    assert len(after) - 2 == -(-(source.size - 2 * CHUNK) // CHUNK)
    assert progress[:2] == [0, 2 * CHUNK] and progress[-1] == source.size
    assert holds(emu_control, emu, session.id, big_clip)


def test_a_fresh_size_other_than_the_source_is_refused_before_any_request(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    source = LocalFileSource(big_clip)
    session = init(client, emu, source.size + 10)
    with pytest.raises(TusError) as info:
        tus.upload(session.endpoint, source, fresh_filesize=source.size + 10)
    assert not info.value.retryable and "source has" in str(info.value)
    assert tus_requests(emu_control, emu) == []


def test_a_wrong_fresh_size_ends_in_a_clear_error_not_a_loop(
    client: VideoClient,
    emu: Workspace,
    emu_control: EmulatorControl,
    tus: TusUpload,
    big_clip: Path,
    tmp_path: Path,
) -> None:
    source = LocalFileSource(big_clip)
    # The endpoint was opened for fewer bytes than the source has (a caller that named the wrong size).
    small = init(client, emu, source.size - CHUNK // 2)
    with pytest.raises(TusError) as bigger:
        tus.upload(small.endpoint, source, fresh_filesize=source.size)
    assert not bigger.value.retryable and bigger.value.status == 413
    # An endpoint of another size that already holds bytes: the 409's HEAD shows the length; no retry.
    other = tmp_path / "other.bin"
    other.write_bytes(os.urandom(3 * CHUNK))
    held = init(client, emu, 3 * CHUNK)
    with pytest.raises(Stop):
        tus.upload(held.endpoint, LocalFileSource(other), on_progress=stop_after(1), fresh_filesize=3 * CHUNK)
    before = len(tus_requests(emu_control, emu))
    with pytest.raises(TusError) as mismatch:
        tus.upload(held.endpoint, source, fresh_filesize=source.size)
    assert not mismatch.value.retryable and "expects" in str(mismatch.value)
    assert tus_requests(emu_control, emu)[before:] == [("PATCH", 409), ("HEAD", 200)]


def test_another_4xx_to_a_fresh_patch_is_believed_only_after_a_head(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, tus: TusUpload, big_clip: Path
) -> None:
    # The spec names tus without its 409: a server answering a wrong offset with another 4xx still works.
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    with pytest.raises(Stop):
        tus.upload(session.endpoint, source, on_progress=stop_after(CHUNK), fresh_filesize=source.size)
    emu_control.set_faults(emu, [{"kind": "error", "status": 400, "method": "PATCH", "times": 1}])
    before = len(tus_requests(emu_control, emu))
    assert tus.upload(session.endpoint, source, fresh_filesize=source.size) == source.size
    assert tus_requests(emu_control, emu)[before : before + 3] == [
        ("PATCH", 400),
        ("HEAD", 200),
        ("PATCH", 204),
    ]
    assert wait_status(emu_control, emu, session.id) == "done"
    # At the offset the server holds (0), the same refusal is about something else: it ends the upload.
    fresh = init(client, emu, source.size)
    emu_control.set_faults(emu, [{"kind": "error", "status": 400, "method": "PATCH", "times": 1}])
    before = len(tus_requests(emu_control, emu))
    with pytest.raises(TusError) as info:
        tus.upload(fresh.endpoint, source, fresh_filesize=source.size)
    assert not info.value.retryable and info.value.status == 400
    assert tus_requests(emu_control, emu)[before:] == [("PATCH", 400), ("HEAD", 200)]


def test_an_upload_held_by_another_patch_is_waited_for_not_failed(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, big_clip: Path
) -> None:
    """Another PATCH holds the upload (a dead writer's body the server still reads; here a slow one from a
    thread): the 409s it causes are waited for, even by an uploader allowed a single failure, and the
    upload goes on from where the other left it."""
    source = LocalFileSource(big_clip)
    session = session_for(client, emu, source)
    first = big_clip.read_bytes()[:CHUNK]
    headers = {
        "Tus-Resumable": "1.0.0",
        "Upload-Offset": "0",
        "Content-Type": "application/offset+octet-stream",
    }
    emu_control.set_faults(emu, [{"kind": "bandwidth", "path": "^/upload/", "bytes_per_second": 16_000}])
    answers: list[int] = []
    other = threading.Thread(
        target=lambda: answers.append(
            httpx.patch(session.endpoint, content=first, headers=headers, timeout=60).status_code
        )
    )
    other.start()
    deadline = time.monotonic() + 30
    while not [r for r in emu_control.requests(emu.workspace_id, open_now=True) if r["method"] == "PATCH"]:
        assert time.monotonic() < deadline, "the other PATCH never reached the upload host"
    emu_control.clear_faults(emu)  # the other PATCH keeps its slow link; ours go at full speed
    with TusUpload(
        chunk_size=CHUNK, max_chunk_size=CHUNK, initial_wait=0.05, max_wait=0.2, max_attempts=1
    ) as t:
        assert t.upload(session.endpoint, source, offset=0) == source.size
    other.join(30)
    assert answers == [204]
    statuses = [s for m, s in tus_requests(emu_control, emu) if m == "PATCH"]
    assert 409 in statuses  # held while the other PATCH was read: not the one failure allowed
    assert holds(emu_control, emu, session.id, big_clip)

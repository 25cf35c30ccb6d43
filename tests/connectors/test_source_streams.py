"""Byte sources read chunk after chunk from one request kept open, counted where the requests arrive (a relay
in front of moto's S3 server and of a file host): one GET for a whole upload, a reopen from the right offset
after a cut, a changed object refused even when the store ignores If-Match, a Range-ignoring host read
once."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.fixtures.http_relay import HttpRelay, Seen
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.s3 import S3Config, make_s3_client
from videoferry.connectors.sources import S3ObjectSource, SourceError, open_source
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace

PAYLOAD = bytes((i * 31 + i // 977) % 256 for i in range(300_001))
CHUNK = 64 * 1024  # five chunks of PAYLOAD


@pytest.fixture()
def moto_relay(s3_server: str) -> Iterator[HttpRelay]:
    parts = urlsplit(s3_server)
    relay = HttpRelay((parts.hostname or "127.0.0.1", parts.port or 80))
    yield relay
    relay.close()


@pytest.fixture()
def direct(s3_server: str):
    return make_s3_client(S3Config(endpoint_url=s3_server))


@pytest.fixture()
def relayed(moto_relay: HttpRelay):
    return make_s3_client(S3Config(endpoint_url=moto_relay.url))


def _tus_from(emu: Workspace, src: S3ObjectSource) -> int:
    limiter = ApiRateLimiter.memory()
    retry = RetryPolicy(max_attempts=5, initial_wait=0.01, max_wait=0.05)
    try:
        with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=retry) as client:
            session = client.uploads.create_video(parent_id=emu.project_id, title="s3", filesize=src.size)
        with TusUpload(chunk_size=CHUNK, initial_wait=0.01, max_wait=0.05) as tus:
            return tus.upload(session.endpoint, src, fresh_filesize=src.size)
    finally:
        limiter.close()


def test_a_tus_upload_from_s3_is_one_get(
    direct, relayed, moto_relay: HttpRelay, s3_bucket: str, emu: Workspace, emu_control: EmulatorControl
) -> None:
    direct.put_object(Bucket=s3_bucket, Key="in/clip.mp4", Body=PAYLOAD)
    src = open_source(f"s3://{s3_bucket}/in/clip.mp4", client=relayed)
    assert isinstance(src, S3ObjectSource)
    assert _tus_from(emu, src) == len(PAYLOAD)
    # Five chunks (five PATCHes), one GET moto received: the body read on from chunk to chunk.
    assert moto_relay.gets() == [Seen("GET", f"/{s3_bucket}/in/clip.mp4", "bytes=0-")]
    stored = emu_control.videos(emu)
    assert [v.get("file_size") for v in stored] == [len(PAYLOAD)]


def test_a_cut_s3_stream_is_reopened_where_it_broke(
    direct, relayed, moto_relay: HttpRelay, s3_bucket: str, emu: Workspace, emu_control: EmulatorControl
) -> None:
    direct.put_object(Bucket=s3_bucket, Key="in/cut.mp4", Body=PAYLOAD)
    src = open_source(f"s3://{s3_bucket}/in/cut.mp4", client=relayed)
    assert isinstance(src, S3ObjectSource)
    moto_relay.cut_get(150_000)  # inside the third chunk
    assert _tus_from(emu, src) == len(PAYLOAD)
    gets = moto_relay.gets()
    assert moto_relay.cuts == 1 and len(gets) == 2 and gets[0].range == "bytes=0-"
    # Reopened from the first byte not yet read (1 MiB blocks are cut to the chunk: a chunk boundary or a
    # block inside the third chunk), to the end: the rest of the upload from that one GET.
    reopened = int(gets[1].range.removeprefix("bytes=").removesuffix("-"))
    assert 2 * CHUNK <= reopened < 150_000 and gets[1].range.endswith("-")
    assert [v.get("file_size") for v in emu_control.videos(emu)] == [len(PAYLOAD)]


def test_a_resumed_tus_upload_reopens_the_s3_stream_at_the_servers_offset(
    direct, relayed, moto_relay: HttpRelay, s3_bucket: str, emu: Workspace, emu_control: EmulatorControl
) -> None:
    direct.put_object(Bucket=s3_bucket, Key="in/resume.mp4", Body=PAYLOAD)
    src = open_source(f"s3://{s3_bucket}/in/resume.mp4", client=relayed)
    assert isinstance(src, S3ObjectSource)
    # The first PATCH: half its body kept, the connection dropped; the upload asks the offset (HEAD) and
    # goes on from there, behind where the source's stream stands.
    emu_control.set_faults(emu, [{"kind": "truncate_body", "method": "PATCH", "fraction": 0.5, "times": 1}])
    assert _tus_from(emu, src) == len(PAYLOAD)
    ranges = [g.range for g in moto_relay.gets()]
    assert ranges == ["bytes=0-", f"bytes={CHUNK // 2}-"]
    assert [v.get("file_size") for v in emu_control.videos(emu)] == [len(PAYLOAD)]


def test_blocks_of_a_cut_stream_are_read_on_from_the_exact_offset(
    direct, relayed, moto_relay: HttpRelay, s3_bucket: str
) -> None:
    direct.put_object(Bucket=s3_bucket, Key="in/blocks.mp4", Body=PAYLOAD)
    src = open_source(f"s3://{s3_bucket}/in/blocks.mp4", client=relayed)
    assert isinstance(src, S3ObjectSource)
    moto_relay.cut_get(70_000)  # the answer's headers and 69,xxx bytes of its body arrive
    blocks = list(src.stream_range(10_000, 200_000, block=10_000))
    assert b"".join(blocks) == PAYLOAD[10_000:210_000]  # every byte once, in order
    assert max(len(b) for b in blocks) <= 10_000  # one block at a time in memory
    first, second = (g.range for g in moto_relay.gets())
    # Reopened from the first byte not yet had (all that arrived was used), to the end.
    arrived = int(second.removeprefix("bytes=").removesuffix("-")) - 10_000
    assert (first, second) == ("bytes=10000-", f"bytes={10_000 + arrived}-") and 69_000 < arrived < 70_000
    # The next range where this one ended: the same answer, no request.
    assert src.read_range(210_000, 50_000) == PAYLOAD[210_000:260_000]
    # A seek (a resume at another offset): the kept answer closed, a GET from there.
    assert src.read_range(5, 10) == PAYLOAD[5:15]
    assert [g.range for g in moto_relay.gets()] == [first, second, "bytes=5-"]
    src.close()


def test_an_object_replaced_mid_transfer_is_refused_even_when_if_match_is_ignored(
    direct, s3_server: str, s3_bucket: str
) -> None:
    parts = urlsplit(s3_server)
    relay = HttpRelay((parts.hostname or "127.0.0.1", parts.port or 80), strip=("if-match",))
    try:
        client = make_s3_client(S3Config(endpoint_url=relay.url))
        direct.put_object(Bucket=s3_bucket, Key="v.mp4", Body=PAYLOAD)
        src = open_source(f"s3://{s3_bucket}/v.mp4", client=client)
        assert src.read_range(0, 10) == PAYLOAD[:10]
        direct.put_object(Bucket=s3_bucket, Key="v.mp4", Body=PAYLOAD[::-1])
        with pytest.raises(SourceError, match="changed while reading") as caught:
            src.read_range(20, 100_000)  # a seek: reopened, and moto never saw the If-Match
        assert "ETag no longer matches" in str(caught.value)
        assert [g.range for g in relay.gets()] == ["bytes=0-", "bytes=20-"]
    finally:
        relay.close()

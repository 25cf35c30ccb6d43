"""Byte sources: local files and S3 objects (moto on loopback) read by range; open_source dispatch."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from botocore.response import StreamingBody

from videoferry.connectors.s3 import S3Config, make_s3_client
from videoferry.connectors.sources import (
    ByteSource,
    ByteSourceReader,
    LocalFileSource,
    S3ObjectSource,
    SourceError,
    iter_chunks,
    iter_range,
    open_source,
)
from videoferry.core.redact import safe_uri

PAYLOAD = bytes((i * 7) % 256 for i in range(300_001))


@pytest.fixture()
def client(s3_server: str):
    return make_s3_client(S3Config(endpoint_url=s3_server))


def _record_ranges(client) -> list[str]:
    """The Range header of every GetObject the client sends from now on, in order."""
    ranges: list[str] = []
    client.meta.events.register(
        "before-call.s3.GetObject", lambda params, **kw: ranges.append(params["headers"].get("Range"))
    )
    return ranges


@pytest.fixture()
def local_file(tmp_path: Path) -> Path:
    path = tmp_path / "clip one.mp4"
    path.write_bytes(PAYLOAD)
    return path


def test_local_source_reads_ranges(local_file: Path) -> None:
    src = open_source(str(local_file))
    assert isinstance(src, LocalFileSource)
    assert isinstance(src, ByteSource)
    assert (src.name, src.size, src.uri) == ("clip one.mp4", len(PAYLOAD), str(local_file))
    assert src.read_range(0, 5) == PAYLOAD[:5]
    assert src.read_range(1000, 65_536) == PAYLOAD[1000:66_536]
    assert src.read_range(len(PAYLOAD) - 3, 100) == PAYLOAD[-3:]  # clamped at the end
    assert src.read_range(len(PAYLOAD), 10) == b""
    with pytest.raises(ValueError):
        src.read_range(len(PAYLOAD) + 1, 1)
    assert b"".join(iter_chunks(src, 64 * 1024)) == PAYLOAD
    assert b"".join(iter_chunks(src, 100_000, start=250_000)) == PAYLOAD[250_000:]


def test_iter_range_streams_a_local_file_in_blocks(local_file: Path) -> None:
    src = LocalFileSource(local_file)
    src.stream_block = 1000  # type: ignore[misc]
    blocks = list(iter_range(src, 500, 3_500))
    assert [len(b) for b in blocks] == [1000, 1000, 1000, 500]
    assert b"".join(blocks) == PAYLOAD[500:4_000]
    # The default block is 1 MiB: a range below that is one read.
    assert [len(b) for b in iter_range(LocalFileSource(local_file), 0, len(PAYLOAD))] == [len(PAYLOAD)]


class _Memory:
    """A source without a stream_block (as S3, where every read is a request): counts its reads."""

    def __init__(self, data: bytes, size: int | None = None) -> None:
        self.data, self.uri, self.name = data, "mem://x", "x"
        self.size = len(data) if size is None else size
        self.reads: list[tuple[int, int]] = []

    def read_range(self, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return self.data[offset : offset + length]


def test_iter_range_reads_other_sources_in_one_read_and_refuses_a_short_one() -> None:
    src = _Memory(PAYLOAD)
    assert b"".join(iter_range(src, 100, 200_000)) == PAYLOAD[100:200_100]
    assert src.reads == [(100, 200_000)]
    short = _Memory(PAYLOAD[:1000], size=2000)  # says 2000 bytes, has 1000
    with pytest.raises(SourceError, match="ended at byte 1000"):
        list(iter_range(short, 0, 2000))


def test_file_uri_opens_a_local_source(local_file: Path) -> None:
    src = open_source("file://" + str(local_file).replace(" ", "%20"))
    assert isinstance(src, LocalFileSource)
    assert src.read_range(10, 10) == PAYLOAD[10:20]


def test_local_source_errors_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.mp4"
    with pytest.raises(SourceError) as exc:
        open_source(str(missing))
    assert str(missing) in str(exc.value)
    assert "not found" in str(exc.value)
    with pytest.raises(SourceError, match="directory"):
        open_source(str(tmp_path))


def test_local_source_detects_a_file_that_shrank(tmp_path: Path) -> None:
    path = tmp_path / "a.mp4"
    path.write_bytes(b"x" * 1000)
    src = open_source(str(path))
    path.write_bytes(b"x" * 10)
    with pytest.raises(SourceError, match="shrank"):
        src.read_range(0, 1000)


def test_http_urls_are_not_byte_sources_and_the_query_stays_secret() -> None:
    url = "https://media.example.test/v/clip.mp4?X-Amz-Signature=TOPSECRET&token=abc"
    with pytest.raises(SourceError) as exc:
        open_source(url)
    message = str(exc.value)
    assert "import-by-URL" in message
    assert "https://media.example.test/v/clip.mp4" in message
    assert "TOPSECRET" not in message and "token=" not in message
    assert safe_uri("https://user:pw@host.test:8443/a?b=c#d") == "https://host.test:8443/a"


def test_unknown_scheme_is_a_source_error() -> None:
    with pytest.raises(SourceError, match="unsupported scheme"):
        open_source("gs://bucket/clip.mp4")


def test_s3_source_reads_chunk_after_chunk_from_one_get(client, s3_bucket: str, s3_server: str) -> None:
    client.put_object(Bucket=s3_bucket, Key="in/clip.mp4", Body=PAYLOAD)
    ranges = _record_ranges(client)
    src = open_source(f"s3://{s3_bucket}/in/clip.mp4", client=client)
    assert isinstance(src, S3ObjectSource)
    assert (src.name, src.size, src.uri) == ("clip.mp4", len(PAYLOAD), f"s3://{s3_bucket}/in/clip.mp4")

    chunks = list(iter_chunks(src, 100_000))
    assert [len(c) for c in chunks] == [100_000, 100_000, 100_000, 1]
    assert b"".join(chunks) == PAYLOAD
    # One GET from the first byte to the end, its body read on chunk after chunk (one chunk in memory).
    assert ranges == ["bytes=0-"]


def test_iter_range_streams_an_s3_range_from_one_get(client, s3_bucket: str) -> None:
    client.put_object(Bucket=s3_bucket, Key="in/big.mp4", Body=PAYLOAD)
    ranges = _record_ranges(client)
    src = open_source(f"s3://{s3_bucket}/in/big.mp4", client=client)
    assert isinstance(src, S3ObjectSource)
    assert b"".join(iter_range(src, 50_000, 250_000)) == PAYLOAD[50_000:300_000]
    blocks = list(src.stream_range(1_000, 200_000, block=64_000))
    assert b"".join(blocks) == PAYLOAD[1_000:201_000]
    assert len(blocks) > 1 and max(len(b) for b in blocks) <= 64_000  # one block at a time in memory
    assert ranges == ["bytes=50000-", "bytes=1000-"]  # one GET per seek, not per block


def test_a_broken_s3_stream_is_read_on_from_where_it_broke(client, s3_bucket: str) -> None:
    client.put_object(Bucket=s3_bucket, Key="in/cut.mp4", Body=PAYLOAD)
    ranges = _record_ranges(client)

    def cut_the_first_answer(parsed: dict[str, object], **_: object) -> None:
        if len(ranges) == 1:  # the first GET's body ends after 70,000 of the bytes it announced
            body = parsed["Body"]
            length = int(str(parsed["ContentLength"]))
            head = body.read(70_000)  # type: ignore[attr-defined]
            body.close()  # type: ignore[attr-defined]
            parsed["Body"] = StreamingBody(io.BytesIO(head), length)

    client.meta.events.register("after-call.s3.GetObject", cut_the_first_answer)
    src = open_source(f"s3://{s3_bucket}/in/cut.mp4", client=client)
    blocks = list(iter_range(src, 10_000, 200_000))
    assert b"".join(blocks) == PAYLOAD[10_000:210_000]  # every byte once, in order
    assert ranges == ["bytes=10000-", "bytes=80000-"]


def test_s3_source_through_config(s3_bucket: str, s3_server: str) -> None:
    make_s3_client(S3Config(endpoint_url=s3_server)).put_object(Bucket=s3_bucket, Key="x.bin", Body=b"hello")
    src = open_source(f"s3://{s3_bucket}/x.bin", s3=S3Config(endpoint_url=s3_server))
    assert src.read_range(1, 3) == b"ell"


def test_s3_source_errors(client, s3_bucket: str) -> None:
    with pytest.raises(SourceError) as exc:
        open_source(f"s3://{s3_bucket}/missing.mp4", client=client)
    assert f"s3://{s3_bucket}/missing.mp4" in str(exc.value)
    assert "not found" in str(exc.value)
    with pytest.raises(SourceError, match="not a bucket or prefix"):
        open_source(f"s3://{s3_bucket}/dir/", client=client)


def test_s3_source_refuses_an_object_replaced_mid_transfer(client, s3_bucket: str) -> None:
    client.put_object(Bucket=s3_bucket, Key="v.mp4", Body=b"a" * 100)
    src = open_source(f"s3://{s3_bucket}/v.mp4", client=client)
    assert src.read_range(0, 10) == b"a" * 10
    client.put_object(Bucket=s3_bucket, Key="v.mp4", Body=b"b" * 100)
    # Read on, the GET kept open still gives the first object's bytes (one answer is one version); a read
    # elsewhere opens a GET If-Match the first ETag: refused.
    assert src.read_range(10, 10) == b"a" * 10
    with pytest.raises(SourceError, match="changed"):
        src.read_range(50, 10)


def test_reader_is_a_seekable_stream(local_file: Path, client, s3_bucket: str) -> None:
    client.put_object(Bucket=s3_bucket, Key="r.bin", Body=PAYLOAD)
    for src in (open_source(str(local_file)), open_source(f"s3://{s3_bucket}/r.bin", client=client)):
        reader = ByteSourceReader(src)
        out = io.BytesIO()
        shutil.copyfileobj(reader, out, 50_000)
        assert out.getvalue() == PAYLOAD
        assert reader.seek(-10, os.SEEK_END) == len(PAYLOAD) - 10
        assert reader.read() == PAYLOAD[-10:]
        reader.seek(5)
        buf = bytearray(4)
        assert reader.readinto(buf) == 4 and bytes(buf) == PAYLOAD[5:9]
        assert reader.tell() == 9

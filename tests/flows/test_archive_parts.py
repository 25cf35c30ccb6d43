"""The archive's pieces on real parts: multipart writer on moto (parts, flat memory, abort), QoS windows."""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.exceptions import ClientError

from connectors.s3_multipart import MIN_PART_SIZE, MultipartWriter, abort_uploads, open_uploads
from tasks.archive.events import QOS_BUCKET, qos_windows


def _client(endpoint: str):  # type: ignore[no-untyped-def]
    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")


def test_multipart_writer_sends_parts_while_bytes_arrive_with_bounded_memory(
    s3_server: str, s3_bucket: str
) -> None:
    client = _client(s3_server)
    writer = MultipartWriter(client, s3_bucket, "a/big.mp4", part_size=MIN_PART_SIZE, in_flight=2)
    chunk = os.urandom(1024 * 1024 + 3)  # chunks that straddle the parts' edges
    digest = hashlib.md5()
    peak_parts = 0
    for _ in range(26):  # 26 MiB and 78 bytes: parts of 5 MiB (five of them) and the rest
        writer.write(chunk)
        digest.update(chunk)
        peak_parts = max(peak_parts, writer.parts_in_memory)
    assert open_uploads(client, s3_bucket, "a/big.mp4") == [writer.upload_id]
    assert not client.list_objects_v2(Bucket=s3_bucket).get("Contents")  # nothing looks complete yet
    writer.complete()
    # Memory: the part being filled and at most in_flight parts being sent, in buffers that are reused.
    assert 1 <= peak_parts <= 2 and writer.buffers <= 3
    body = client.get_object(Bucket=s3_bucket, Key="a/big.mp4")["Body"].read()
    assert hashlib.md5(body).hexdigest() == digest.hexdigest()
    head = client.head_object(Bucket=s3_bucket, Key="a/big.mp4", ChecksumMode="ENABLED")
    assert head["ETag"].strip('"').endswith("-6")
    # Each part went with its CRC32, declared at creation: S3 keeps the composite of the six (and checked
    # each on arrival), not a full-object checksum it would compute over the whole object at completion.
    parts = [b"".join([chunk] * 26)[i : i + MIN_PART_SIZE] for i in range(0, 26 * len(chunk), MIN_PART_SIZE)]
    crcs = b"".join(zlib.crc32(p).to_bytes(4, "big") for p in parts)
    composite = base64.b64encode(zlib.crc32(crcs).to_bytes(4, "big")).decode()
    assert head["ChecksumCRC32"].removesuffix("-6") == composite  # S3 adds the part count, moto does not
    assert open_uploads(client, s3_bucket, "a/big.mp4") == []
    with pytest.raises(ValueError):
        MultipartWriter(client, s3_bucket, "x", in_flight=0)


def test_a_part_that_fails_is_raised_by_the_next_write_and_the_abort_leaves_nothing(
    s3_server: str, s3_bucket: str
) -> None:
    client = _client(s3_server)
    writer = MultipartWriter(client, s3_bucket, "f.mp4", part_size=MIN_PART_SIZE, in_flight=1)
    writer.write(os.urandom(MIN_PART_SIZE))  # part 1 goes out
    abort_uploads(client, s3_bucket, "f.mp4")  # the upload disappears under the writer: parts now fail
    with pytest.raises(ClientError):
        for _ in range(3):
            writer.write(os.urandom(MIN_PART_SIZE))
    writer.abort()
    assert open_uploads(client, s3_bucket, "f.mp4") == []
    assert not client.list_objects_v2(Bucket=s3_bucket).get("Contents")


def test_an_interrupted_upload_is_aborted_with_its_parts(s3_server: str, s3_bucket: str) -> None:
    client = _client(s3_server)
    writer = MultipartWriter(client, s3_bucket, "k.mp4", part_size=MIN_PART_SIZE)
    writer.write(os.urandom(MIN_PART_SIZE))  # one part sent
    other = MultipartWriter(client, s3_bucket, "k.mp4.other", part_size=MIN_PART_SIZE)
    other.start()
    assert abort_uploads(client, s3_bucket, "k.mp4") == 1  # only this key's upload
    assert open_uploads(client, s3_bucket, "k.mp4") == []
    assert open_uploads(client, s3_bucket, "k.mp4.other") == [other.upload_id]
    other.abort()
    with pytest.raises(ValueError):
        MultipartWriter(client, s3_bucket, "x", part_size=MIN_PART_SIZE - 1)


def test_qos_windows_cover_a_long_stream_in_answers_under_12_hours() -> None:
    start = datetime(2026, 11, 20, 18, 0, 7, tzinfo=UTC)
    end = start + timedelta(hours=30, minutes=5)
    windows = qos_windows(start, end)
    assert len(windows) == 3
    assert windows[0][0] <= start and windows[-1][1] == end
    for (_a, b), (c, _) in zip(windows, windows[1:], strict=False):
        assert b == c  # contiguous
    for a, b in windows:
        assert b - a < timedelta(hours=12)
        assert a.timestamp() % QOS_BUCKET.total_seconds() == 0 or a == windows[-1][0]
    assert qos_windows(start, start + timedelta(seconds=10)) == [
        (start - timedelta(seconds=7), start + timedelta(seconds=10))
    ]

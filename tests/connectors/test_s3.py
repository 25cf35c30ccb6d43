"""S3 helpers against moto's server on loopback: URIs, config, paginated listings, presigned GETs, ranges."""

from __future__ import annotations

import httpx
import pytest

from videoferry.connectors.s3 import (
    S3Config,
    S3UriError,
    get_object_bytes,
    head_object,
    list_prefix,
    make_s3_client,
    parse_s3_uri,
    presign_get,
    read_range,
    shared_s3_client,
)


@pytest.fixture()
def client(s3_server: str):
    return make_s3_client(S3Config(endpoint_url=s3_server))


def test_parse_s3_uri() -> None:
    assert parse_s3_uri("s3://bucket/a/b c.mp4") == ("bucket", "a/b c.mp4")
    assert parse_s3_uri("s3://bucket/prefix/") == ("bucket", "prefix/")
    assert parse_s3_uri("s3://bucket") == ("bucket", "")
    assert parse_s3_uri("s3://bucket/") == ("bucket", "")
    with pytest.raises(S3UriError):
        parse_s3_uri("s3:///key")
    with pytest.raises(S3UriError):
        parse_s3_uri("https://bucket/key")


def test_config_from_env_prefers_videoferry_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.delenv("VIDEOFERRY_S3_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("VIDEOFERRY_S3_REGION", raising=False)
    assert S3Config.from_env() == S3Config(endpoint_url="http://127.0.0.1:1", region=None)
    monkeypatch.setenv("VIDEOFERRY_S3_ENDPOINT_URL", "http://127.0.0.1:2")
    monkeypatch.setenv("VIDEOFERRY_S3_REGION", "eu-west-1")
    assert S3Config.from_env() == S3Config(endpoint_url="http://127.0.0.1:2", region="eu-west-1")
    monkeypatch.delenv("VIDEOFERRY_S3_ENDPOINT_URL")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert S3Config.from_env().endpoint_url is None


def test_shared_client_is_cached_per_config(s3_server: str) -> None:
    cfg = S3Config(endpoint_url=s3_server)
    assert shared_s3_client(cfg) is shared_s3_client(S3Config(endpoint_url=s3_server))
    assert shared_s3_client(cfg) is not shared_s3_client(S3Config(endpoint_url=s3_server, region="eu-west-1"))


def test_list_prefix_paginates_and_yields_sizes(client, s3_bucket: str) -> None:
    expected = {}
    for i in range(7):
        key = f"videos/clip-{i:02d}.mp4"
        body = b"x" * (i * 10)
        client.put_object(Bucket=s3_bucket, Key=key, Body=body)
        expected[key] = len(body)
    client.put_object(Bucket=s3_bucket, Key="other/ignored.mp4", Body=b"zz")

    calls: list[str] = []
    client.meta.events.register("after-call.s3.ListObjectsV2", lambda **kw: calls.append("list"))
    listed = list(list_prefix(client, s3_bucket, "videos/", page_size=3))

    assert dict(listed) == expected
    assert [k for k, _ in listed] == sorted(expected)
    assert len(calls) == 3  # 3 + 3 + 1 keys: the paginator followed continuation tokens


def test_list_prefix_of_empty_prefix(client, s3_bucket: str) -> None:
    assert list(list_prefix(client, s3_bucket, "nothing/")) == []


def test_presigned_url_fetches_the_object_with_httpx(client, s3_bucket: str, s3_server: str) -> None:
    body = bytes(range(256)) * 40
    client.put_object(Bucket=s3_bucket, Key="dir/movie one.mp4", Body=body)
    url = presign_get(client, s3_bucket, "dir/movie one.mp4", expires=600)
    assert url.startswith(f"{s3_server}/{s3_bucket}/")  # path-style addressing on a custom endpoint
    assert "X-Amz-Signature=" in url
    resp = httpx.get(url)
    assert resp.status_code == 200
    assert resp.content == body
    ranged = httpx.get(url, headers={"Range": "bytes=100-199"})
    assert ranged.status_code == 206
    assert ranged.content == body[100:200]


def test_head_and_ranged_reads(client, s3_bucket: str) -> None:
    body = bytes(i % 251 for i in range(100_000))
    client.put_object(Bucket=s3_bucket, Key="blob.bin", Body=body)
    info = head_object(client, s3_bucket, "blob.bin")
    assert info.size == len(body)
    assert info.etag
    assert read_range(client, s3_bucket, "blob.bin", 0, 10) == body[:10]
    assert read_range(client, s3_bucket, "blob.bin", 99_990, 10, etag=info.etag) == body[-10:]
    assert read_range(client, s3_bucket, "blob.bin", 12_345, 54_321) == body[12_345 : 12_345 + 54_321]
    assert read_range(client, s3_bucket, "blob.bin", 5, 0) == b""
    assert get_object_bytes(client, s3_bucket, "blob.bin") == body

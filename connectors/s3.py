"""S3 access through boto3: configuration, s3:// URIs, prefix listings, presigned GETs and ranged reads."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectors.redact import install_boto_redaction

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

ENDPOINT_ENV_VARS = ("VIDEOFERRY_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")
REGION_ENV_VAR = "VIDEOFERRY_S3_REGION"


@dataclass(frozen=True)
class S3Config:
    """Where S3 is: endpoint (None = AWS) and region (None = boto3's own resolution), and the prefect-aws
    AwsCredentials block the credentials come from (its name; None: boto3's standard chain: env, shared
    files, SSO, instance roles).
    """

    endpoint_url: str | None = None
    region: str | None = None
    block: str | None = None

    @classmethod
    def from_env(cls) -> S3Config:
        """Read VIDEOFERRY_S3_ENDPOINT_URL (else AWS_ENDPOINT_URL), VIDEOFERRY_S3_REGION and
        VIDEOFERRY_AWS_CREDENTIALS_BLOCK (connectors/aws_block.py); the block's endpoint and region where no
        variable sets them."""
        from connectors.aws_block import aws_block_endpoint, aws_block_name, aws_block_region

        endpoint = next((os.environ[name] for name in ENDPOINT_ENV_VARS if os.environ.get(name)), None)
        region = os.environ.get(REGION_ENV_VAR) or None
        block = aws_block_name()
        if block is not None:
            endpoint = endpoint or aws_block_endpoint(block)
            region = region or aws_block_region(block)
        return cls(endpoint_url=endpoint, region=region, block=block)


class S3UriError(ValueError):
    """An s3:// URI that cannot be parsed."""


def make_s3_client(cfg: S3Config | None = None) -> S3Client:
    """Make a new thread-safe S3 client; path-style addressing when a custom endpoint is set (MinIO, moto)."""
    cfg = cfg or S3Config.from_env()
    install_boto_redaction()
    import boto3  # here, not at the top: every command imports this module, few of them reach S3 (0.2 s)
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=32,
        s3={"addressing_style": "path" if cfg.endpoint_url else "auto"},
        signature_version="s3v4",
    )
    # A private session: boto3's default session is not thread-safe to create clients from.
    if cfg.block is not None:
        from connectors.aws_block import aws_block_session

        session = aws_block_session(cfg.block)
    else:
        session = boto3.session.Session()
    client: S3Client = session.client(
        "s3", endpoint_url=cfg.endpoint_url, region_name=cfg.region, config=config
    )
    return client


_clients: dict[S3Config, S3Client] = {}
_clients_lock = threading.Lock()


def shared_s3_client(cfg: S3Config | None = None) -> S3Client:
    """One cached client per configuration (boto3 clients are thread-safe and costly to build)."""
    cfg = cfg or S3Config.from_env()
    with _clients_lock:
        client = _clients.get(cfg)
        if client is None:
            client = make_s3_client(cfg)
            _clients[cfg] = client
        return client


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """Split ``s3://bucket/key`` into (bucket, key); the key is '' for ``s3://bucket`` or ``s3://bucket/``."""
    if not uri.startswith("s3://"):
        raise S3UriError(f"not an s3:// uri: {uri}")
    rest = uri[len("s3://") :]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise S3UriError(f"s3 uri has no bucket: {uri}")
    return bucket, key


def list_prefix(
    client: S3Client, bucket: str, prefix: str, *, page_size: int = 1000
) -> Iterator[tuple[str, int]]:
    """Yield (key, size) of every object under ``prefix``, page by page (ListObjectsV2)."""
    paginator = client.get_paginator("list_objects_v2")
    pages = paginator.paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size})
    for page in pages:
        for obj in page.get("Contents", []):
            yield obj["Key"], int(obj["Size"])


def presign_get(client: S3Client, bucket: str, key: str, expires: int = 3600) -> str:
    """A presigned GET URL for import by URL. It is a secret: never log it."""
    url: str = client.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires
    )
    return url


@dataclass(frozen=True)
class S3ObjectInfo:
    """Size and ETag of one object."""

    size: int
    etag: str


def head_object(client: S3Client, bucket: str, key: str) -> S3ObjectInfo:
    """HEAD one object: its size and ETag."""
    resp = client.head_object(Bucket=bucket, Key=key)
    return S3ObjectInfo(size=int(resp["ContentLength"]), etag=str(resp.get("ETag", "")))


def read_range(
    client: S3Client, bucket: str, key: str, offset: int, length: int, *, etag: str | None = None
) -> bytes:
    """Read ``length`` bytes from ``offset`` with one ranged GET (If-Match ``etag`` when given)."""
    if length <= 0:
        return b""
    return _read_body(get_range(client, bucket, key, offset, length, etag=etag))


def get_range(
    client: S3Client, bucket: str, key: str, offset: int, length: int, *, etag: str | None = None
) -> Any:
    """The get_object answer of one ranged GET (If-Match ``etag`` when given); its "Body" is still unread."""
    kwargs: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": f"bytes={offset}-{offset + length - 1}"}
    if etag:
        kwargs["IfMatch"] = etag
    return client.get_object(**kwargs)


def get_object_bytes(client: S3Client, bucket: str, key: str) -> bytes:
    """Read a whole (small) object, e.g. an inventory file. Never used for video bytes."""
    return _read_body(client.get_object(Bucket=bucket, Key=key))


def _read_body(resp: Any) -> bytes:
    """The bytes of a get_object answer; its stream is closed either way."""
    body = resp["Body"]
    try:
        data: bytes = body.read()
    finally:
        body.close()
    return data


def client_error_code(exc: BaseException) -> str:
    """The S3 error code of a botocore ClientError ('' for anything else)."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""

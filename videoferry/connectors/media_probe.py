"""A media file's duration (local, or an S3 object), read from its container with PyAV (None: not media)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from videoferry.connectors.s3 import S3Config


def file_duration(path: str | Path) -> float | None:
    """Seconds of a local media file by its container (or its longest stream); None when unreadable."""
    import av

    try:
        with av.open(str(path)) as container:
            if container.duration is not None:
                return float(container.duration / av.time_base)
            spans = [float(s.duration * s.time_base) for s in container.streams if s.duration and s.time_base]
            return max(spans) if spans else None
    except (av.FFmpegError, OSError):
        return None


def object_duration(uri: str, cfg: S3Config | None = None) -> float | None:
    """Seconds of an S3 object (s3://bucket/key) by its container, read through a short-lived presigned
    GET (the container's index only, not the whole object); None when unreadable. The link is never shown."""
    from botocore.exceptions import BotoCoreError, ClientError

    from videoferry.connectors.s3 import parse_s3_uri, presign_get, shared_s3_client

    try:
        bucket, key = parse_s3_uri(uri)
        link = presign_get(shared_s3_client(cfg), bucket, key, expires=600)
    except (BotoCoreError, ClientError, ValueError):  # no credentials, a malformed URI: not readable
        return None
    return file_duration(link)

"""Inventory source cells: what a relative path resolves against, and one source cell's canonical form."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from connectors.sources import SourceError, file_uri_to_path
from core.redact import safe_uri

SCHEME_RE = r"^([A-Za-z][A-Za-z0-9+.\-]*)://"


@dataclass(frozen=True)
class SourceBase:
    """What relative local paths in the inventory resolve against: a directory, or an S3 'directory'."""

    local_dir: str | None = None
    s3_bucket: str | None = None
    s3_dir: str = ""


def parse_source(value: str, base: SourceBase) -> tuple[str | None, str | None, str | None, str]:
    """(source, type, error, safe value) of one source cell (the common shapes are done in polars)."""
    safe = safe_uri(value)
    match = re.match(SCHEME_RE, value)
    if match:
        scheme, rest = match.group(1).lower(), value[match.end() :]
        if scheme == "s3":
            bucket, _, key = rest.partition("/")
            if not bucket or not key or key.endswith("/"):
                return None, None, "an s3 source must be s3://bucket/key naming one object", safe
            return f"s3://{rest}", "s3", None, safe
        if scheme in ("http", "https"):
            netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
            host = netloc.rpartition("@")[2]
            if not host:
                return None, None, "URL has no host", safe
            if re.search(r"\s", value):
                return None, None, "URL contains whitespace (percent-encode it)", safe
            return value, "url", None, safe
        if scheme == "file":
            try:
                return os.path.normpath(file_uri_to_path(value)), "file", None, safe
            except SourceError as exc:
                return None, None, exc.reason, safe
        return (
            None,
            None,
            f"unknown scheme {scheme!r} (expected a local path, file://, s3:// or http(s)://)",
            safe,
        )
    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return os.path.normpath(path), "file", None, safe
    if base.local_dir is not None:
        return os.path.normpath(os.path.join(base.local_dir, path)), "file", None, safe
    if base.s3_bucket is not None:
        key = posixpath.normpath(posixpath.join(base.s3_dir, path))
        if key in (".", "..") or key.startswith("../") or value.endswith("/"):
            return None, None, "relative path does not name an object in the inventory's bucket", safe
        return f"s3://{base.s3_bucket}/{key}", "s3", None, safe
    return None, None, "relative path with nothing to resolve it against", safe



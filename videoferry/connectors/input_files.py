"""Input files (inventories, operation files): their bytes from a path or S3, their format by extension."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.inventory_sources import SourceBase
from videoferry.connectors.s3 import (
    S3Config,
    client_error_code,
    get_object_bytes,
    parse_s3_uri,
    shared_s3_client,
)
from videoferry.connectors.sources import SourceError, file_uri_to_path
from videoferry.core.redact import safe_uri


class InputFileError(Exception):
    """An input file that cannot be read at all (missing, unreadable, unknown format)."""


def read_input(
    uri: str, s3: S3Config | None, *, what: str, missing_hint: str = ""
) -> tuple[bytes, str, SourceBase]:
    """The file's bytes, its name (for the format) and what relative paths inside it resolve against.

    ``what`` names the file in messages ("inventory", "operations file"); ``missing_hint`` is added to the
    message of an S3 object that does not exist.
    """
    if uri.startswith("s3://"):
        bucket, key = parse_s3_uri(uri)
        if not key or key.endswith("/"):
            raise InputFileError(f"{what} {uri} must name one object (s3://bucket/key)")
        try:
            data = get_object_bytes(shared_s3_client(s3), bucket, key)
        except ClientError as exc:
            code = client_error_code(exc)
            if code == "NoSuchBucket":
                raise InputFileError(f"{what} not found: {uri} (no such bucket)") from None
            if code in ("NoSuchKey", "404"):
                raise InputFileError(f"{what} not found: {uri}{missing_hint}") from None
            raise InputFileError(f"cannot read {what} {uri}: S3 error {code or 'unknown'}") from None
        except BotoCoreError as exc:
            raise InputFileError(f"cannot read {what} {uri}: {type(exc).__name__}") from None
        return data, key, SourceBase(s3_bucket=bucket, s3_dir=posixpath.dirname(key))
    if uri.startswith(("http://", "https://")):
        shown = safe_uri(uri)
        raise InputFileError(f"{what} {shown} must be a local path or an s3:// uri (download it first)")
    try:
        path = Path(file_uri_to_path(uri) if uri.startswith("file://") else uri).expanduser()
    except SourceError as exc:
        raise InputFileError(f"cannot read {what} {uri}: {exc.reason}") from None
    if path.is_dir():
        raise InputFileError(f"{what} {path} is a directory")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {path}: {exc.strerror}") from None
    return data, path.name, SourceBase(local_dir=str(path.resolve().parent))


def detect_format(uri: str, name: str, forced: str | None, formats: Mapping[str, str], *, what: str) -> str:
    """The format `forced` names, else the one the file name's extension says (`formats`: ".csv" -> "csv")."""
    known = sorted(set(formats.values()))
    if forced:
        if forced not in known:
            raise InputFileError(f"unknown {what} format {forced!r} ({', '.join(known)})")
        return forced
    suffix = posixpath.splitext(name.lower())[1]
    if suffix not in formats:
        extensions = ", ".join(sorted(formats))
        raise InputFileError(
            f"cannot tell the format of {what} {safe_uri(uri)} from its extension {suffix or '(none)'!r}: "
            f"use {extensions}"
        )
    return formats[suffix]

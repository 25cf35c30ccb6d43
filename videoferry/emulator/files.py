"""Streaming request bodies to disk (bandwidth cap, truncation fault) and hashing stored files."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from starlette.requests import ClientDisconnect, Request


@dataclass
class BodyResult:
    """How a streamed body ended: bytes written, whether it ended normally, whether to drop the connection."""

    written: int
    complete: bool
    truncated: bool = False
    overflow: bool = False


async def _chunks(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        if chunk:
            yield chunk


async def stream_body(
    request: Request,
    out: BinaryIO,
    *,
    digest: Any | None = None,
    limit: int | None = None,
    keep: int | None = None,
    bytes_per_second: int | None = None,
) -> BodyResult:
    """Copy the request body to `out` as it arrives (never whole in memory).

    limit: most bytes accepted (the rest is refused: overflow); keep: truncation fault, only that many
    bytes are committed and the body is abandoned; bytes_per_second: read no faster than that.
    """
    written = 0
    started = time.monotonic()
    try:
        async for chunk in _chunks(request):
            if keep is not None and written + len(chunk) >= keep:
                chunk = chunk[: keep - written]
                _write(out, digest, chunk)
                written += len(chunk)
                return BodyResult(written, complete=False, truncated=True)
            if limit is not None and written + len(chunk) > limit:
                chunk = chunk[: limit - written]
                _write(out, digest, chunk)
                written += len(chunk)
                return BodyResult(written, complete=True, overflow=True)
            _write(out, digest, chunk)
            written += len(chunk)
            if bytes_per_second:
                ahead = written / bytes_per_second - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
    except ClientDisconnect:
        return BodyResult(written, complete=False)
    return BodyResult(written, complete=True)


def _write(out: BinaryIO, digest: Any | None, chunk: bytes) -> None:
    out.write(chunk)
    if digest is not None:
        digest.update(chunk)


def md5_file(path: Path) -> str:
    """MD5 hex digest of a file, read in blocks."""
    digest = hashlib.md5()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

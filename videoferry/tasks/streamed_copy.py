"""One file copied from a signed download link into a destination, streamed and verified, and what a crashed
copy left behind adopted or discarded: the one copy of the archive and backup jobs.

The link's body goes chunk by chunk from httpx into the destination's writer (S3: parts sent while the next
ones download, connectors/s3_multipart.py; a directory: `<name>.part`, renamed once complete), so nothing is
held whole in memory or staged on disk. Size and md5 are checked against what the service said before the
object is committed, then the stored object is read back (its size; a directory's md5 too). A failed
download is retried from zero with backoff; the partial object is aborted each time. The link is a secret:
it is in no message, result or log line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.download import Downloader, DownloadError
from videoferry.tasks.destination import Destination

__all__ = ["COPY_ERRORS", "CopyError", "Copied", "adopt_copy", "copy_link"]


class CopyError(Exception):
    """The copy could not be completed and verified (the message holds no link)."""


#: What a copy can fail with: the download, the copy's check, the destination (S3 or disk).
COPY_ERRORS = (DownloadError, CopyError, OSError, BotoCoreError, ClientError)


@dataclass(frozen=True)
class Copied:
    """What a verified copy holds: its size and the md5 of its bytes."""

    size: int
    md5: str


def _copy_once(
    dest: Destination, downloader: Downloader, link: str, key: str, size: int | None, md5: str | None
) -> Copied:
    writer = dest.writer(key, md5)
    try:
        got = downloader.fetch(link, writer.write)
        if size is not None and got.size != size:
            raise CopyError(f"size {got.size} differs from the service's {size}")
        if md5 and got.md5 != md5.lower():
            raise CopyError("md5 of the copy differs from the service's")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    stored = dest.stat(key)
    if stored is None or stored[0] != got.size:
        raise CopyError("the stored object's size differs from the bytes copied")
    if stored[1] is not None and stored[1].lower() != got.md5:
        raise CopyError("the stored object's md5 differs from the bytes copied")
    return Copied(got.size, got.md5)


def copy_link(
    dest: Destination,
    downloader: Downloader,
    link: str,
    key: str,
    *,
    size: int | None,
    md5: str | None,
    attempts: int = 5,
    backoff: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> Copied:
    """Stream the link into dest at key, verified against size and md5 (when the service gave them).

    Up to `attempts` tries, `backoff` seconds before the second (doubled each time); a failure the download
    says is not worth repeating (a 404) is raised at once. Raises one of COPY_ERRORS.
    """
    for attempt in range(1, attempts + 1):
        try:
            return _copy_once(dest, downloader, link, key, size, md5)
        except COPY_ERRORS as exc:
            if attempt == attempts or not getattr(exc, "retryable", True):
                raise
            sleep(backoff * 2 ** (attempt - 1))
    raise CopyError("no attempt left")  # pragma: no cover - the loop returns or raises


def adopt_copy(dest: Destination, key: str, size: int | None, md5: str | None) -> bool:
    """After a crash during a copy to key: drop what an unfinished writer left (multipart uploads and their
    parts, a .part file); True when a complete object with the expected size and md5 is already there (the
    copy was committed before the crash: it is kept, not copied again)."""
    dest.discard_partial(key)
    found = dest.stat(key)
    if found is None or not md5 or found[1] is None:
        return False
    return found[0] == size and found[1].lower() == md5.lower()

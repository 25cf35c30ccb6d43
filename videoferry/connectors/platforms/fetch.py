"""One video's file fetched from its platform: the link resolved when it is needed, and resolved again once
when it has expired (by its `expires`, or the file host answering 403 / 410)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import httpx

from videoferry.connectors.platforms.base import DownloadLink, NotFoundError, PlatformError

#: A link that expires sooner than this is resolved again before it is used.
EXPIRY_MARGIN = timedelta(minutes=5)
CHUNK = 1024 * 1024


class Resolver(Protocol):
    """A platform client: resolve_download(video id) -> DownloadLink."""

    platform: str

    def resolve_download(self, video_id: str) -> DownloadLink: ...


def expired(link: DownloadLink, now: datetime | None = None) -> bool:
    """Whether the link's `expires` has passed (or will within EXPIRY_MARGIN)."""
    if link.expires is None:
        return False
    return link.expires - EXPIRY_MARGIN <= (now or datetime.now(link.expires.tzinfo))


def download(
    client: Resolver, video_id: str, dest: Path, *, link: DownloadLink | None = None
) -> DownloadLink:
    """Fetch the video's file into `dest` (written whole, then renamed); the link used. A link given that has
    expired is resolved again, once; the file host never sees the API token. NotFoundError when the video or
    its file is gone; PlatformError for any other answer."""
    for attempt in (1, 2):
        if link is None or expired(link):
            link = client.resolve_download(video_id)
        status = _stream(link, dest)
        if status < 300:
            return link
        if status in (403, 410) and attempt == 1:
            link = None  # expired at the file host: ask the platform for a fresh link
            continue
        if status == 404:
            raise NotFoundError(f"{client.platform} video {video_id}: its file is gone (404)")
        raise PlatformError(f"{client.platform} video {video_id}: the file host answered {status}")
    raise PlatformError(f"{client.platform} video {video_id}: a fresh link was refused too")


def _stream(link: DownloadLink, dest: Path) -> int:
    part = dest.with_name(dest.name + ".part")
    with httpx.Client(follow_redirects=True, timeout=60.0) as http, http.stream("GET", link.url) as answer:
        if answer.status_code >= 300:
            return answer.status_code
        with part.open("wb") as out:
            for chunk in answer.iter_bytes(CHUNK):
                out.write(chunk)
    os.replace(part, dest)
    return 200

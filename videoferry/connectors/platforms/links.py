"""The platform clients one migration resolves download links with: one per platform, made from the
environment at its first use (a run of files alone never needs a platform token)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

import httpx

from videoferry.connectors.platforms.apivideo import ApiVideoClient
from videoferry.connectors.platforms.base import DownloadLink, PlatformClient, PlatformConfigError
from videoferry.connectors.platforms.bunny import BunnyClient
from videoferry.connectors.platforms.cloudflare import CloudflareClient
from videoferry.connectors.platforms.link_source import LinkSource
from videoferry.connectors.platforms.mux import MuxClient
from videoferry.connectors.platforms.origins import Origin
from videoferry.connectors.platforms.vimeo import VimeoClient
from videoferry.connectors.platforms.wistia import WistiaClient
from videoferry.core.item import PLATFORM_SOURCE_RE

#: A client that resolves a video's download link now (`resolve_download(id)`).
LinkClient = VimeoClient | WistiaClient | MuxClient | CloudflareClient | ApiVideoClient | BunnyClient
#: The client of each platform whose videos a migration fetches by link (a Takeout's are files).
CLIENTS: dict[str, type[LinkClient]] = {
    "vimeo": VimeoClient,
    "wistia": WistiaClient,
    "mux": MuxClient,
    "cloudflare": CloudflareClient,
    "apivideo": ApiVideoClient,
    "bunny": BunnyClient,
}


def platform_video(source: str) -> tuple[str, str]:
    """(platform, video id) of a platform video source (`vimeo:<id>`, `bunny:<library>/<guid>`, ...:
    core.item.PLATFORM_SOURCE_RE); ValueError for anything else."""
    match = PLATFORM_SOURCE_RE.match(source)
    if match is None:
        raise ValueError(f"{source[:60]!r} is not a platform video (vimeo:<id>, bunny:<library>/<guid>, ...)")
    return match.group(1), match.group(2)


class PlatformLinks:
    """Resolves a platform video's download link now (the original, else the best progressive MP4:
    connectors/platforms/*.resolve_download), through one client per platform; safe across threads."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self._clients: dict[str, PlatformClient] = {}
        self._lock = threading.Lock()
        self._files: httpx.Client | None = None
        #: key -> where the item came from (set by the run from its listing; empty for an inventory file).
        self.origins: Mapping[str, Origin] = {}

    def client(self, platform: str) -> PlatformClient:
        """The platform's client (PlatformConfigError naming the variable when its token is not set)."""
        with self._lock:
            found = self._clients.get(platform)
            if found is None:
                env = os.environ if self._env is None else self._env
                kind = CLIENTS.get(platform)
                if kind is None:
                    raise PlatformConfigError(f"no platform {platform!r} ({', '.join(CLIENTS)})")
                found = kind.from_env(env)
                self._clients[platform] = found
            return found

    def resolve(self, source: str) -> DownloadLink:
        """The link to fetch the source's file now (NotFoundError: the video is gone at the platform;
        PlatformError: it offers no file; PlatformUnavailable: the platform does not answer)."""
        platform, video_id = platform_video(source)
        client = self.client(platform)
        assert isinstance(client, LinkClient)
        return client.resolve_download(video_id)

    def open_file(self, source: str) -> LinkSource:
        """The source's file as bytes a tus upload reads (connectors/platforms/link_source.py), its link
        resolved now (the errors of resolve())."""
        link = self.resolve(source)
        with self._lock:
            if self._files is None:
                self._files = httpx.Client(follow_redirects=True, timeout=httpx.Timeout(60.0, connect=10.0))
            files = self._files
        return LinkSource(source, link, lambda: self.resolve(source), files)

    def close(self) -> None:
        """Close every client made."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
            files, self._files = self._files, None
        for client in clients:
            client.close()
        if files is not None:
            files.close()

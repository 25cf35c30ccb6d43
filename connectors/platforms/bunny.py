"""The Bunny Stream client: the library key's check, the listing (/library/{id}/videos oldest first, page by
page until a short page) and one video's file on the library's pull zone (the original when the library
keeps originals, else the best MP4 fallback).

Bunny's public reference: https://docs.bunny.net/reference/api-overview (the `AccessKey` header, a key per
library), https://docs.bunny.net/reference/video_list (the list, paging) and
https://docs.bunny.net/stream/storage-structure (`/{video}/original`, `/{video}/play_{height}p.mp4`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from connectors.platforms.base import (
    DownloadLink,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    need,
)
from connectors.platforms.common import SourceClient, listed_seconds
from core.redact import safe_uri

DEFAULT_API_URL = "https://video.bunnycdn.com"
TOKEN_VARIABLE = "VIDEOFERRY_BUNNY_TOKEN"
URL_VARIABLE = "VIDEOFERRY_BUNNY_API_URL"
CDN_VARIABLE = "VIDEOFERRY_BUNNY_CDN_URL"
#: Bunny publishes no figure; the client keeps to about 10 calls a second and waits for any 429.
RATE_PER_MINUTE = 600
PER_PAGE = 1000  # the most a page holds
FINISHED = 4  # a video's `status` once encoded
_HEIGHT = re.compile(r"^(\d+)p$")


class BunnyClient(SourceClient):
    """video.bunnycdn.com (or VIDEOFERRY_BUNNY_API_URL) with the library's Stream API key in the `AccessKey`
    header; files from the library's pull zone (VIDEOFERRY_BUNNY_CDN_URL, such as https://vz-1234.b-cdn.net)."""

    platform = "bunny"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL
    rate_per_minute = RATE_PER_MINUTE

    def __init__(
        self, base_url: str, token: str, *, cdn_url: str, per_page: int = PER_PAGE, **options: Any
    ) -> None:
        super().__init__(base_url, token, **options)
        self.cdn_url = cdn_url.rstrip("/")
        self.per_page = per_page
        self.skipped = 0

    def auth_headers(self, token: str) -> dict[str, str]:
        return {"AccessKey": token}

    @classmethod
    def settings_from_env(cls, env: Mapping[str, str]) -> dict[str, Any]:
        """The library's pull zone (VIDEOFERRY_BUNNY_CDN_URL; PlatformConfigError unless an address)."""
        cdn = env.get(CDN_VARIABLE, "").strip()
        if not cdn.startswith(("http://", "https://")):
            raise PlatformConfigError(
                f"{CDN_VARIABLE} must be the library's pull zone address (https://vz-....b-cdn.net, shown"
                " in the library's API settings): the files are fetched from it"
            )
        return {"cdn_url": cdn}

    def check_access(self, library: str | None = None) -> str:
        """The key opens the library; PlatformConfigError saying what to fix otherwise."""
        if not library:
            raise PlatformConfigError("a Bunny Stream source names its library: bunny:<library id>")
        try:
            self.get_json(
                f"/library/{library}/videos", {"page": 1, "itemsPerPage": 1}, what=f"library {library}"
            )
        except NotFoundError:
            raise PlatformConfigError(f"Bunny Stream has no library {library} (bunny:{library})") from None
        except PlatformConfigError:
            raise PlatformConfigError(
                f"the key in {TOKEN_VARIABLE} does not open library {library}: use that library's Stream API"
                " key (its API settings), not the account's key"
            ) from None
        return ""

    def list_videos(self, library: str | None = None) -> Iterator[SourceVideo]:
        """Every finished video of the library, oldest first, page by page until a short page; videos still
        uploading or encoding are left out and counted in `skipped`."""
        if not library:
            raise PlatformConfigError("a Bunny Stream source names its library: bunny:<library id>")
        self.skipped = 0
        page = 0
        while True:
            page += 1
            where = f"bunny page {page} of library {library}"
            params = {"page": page, "itemsPerPage": self.per_page, "orderBy": "date"}
            body = need(self.get_json(f"/library/{library}/videos", params, what=where), dict, where, "body")
            items = need(body.get("items"), list, where, "items")
            for i, item in enumerate(items):
                item = need(item, dict, where, f"items[{i}]")
                guid = need(item.get("guid"), str, where, f"items[{i}].guid")
                if not guid:
                    raise PlatformError(f"{where}, field items[{i}].guid: empty")
                if item.get("status") != FINISHED:
                    self.skipped += 1
                    continue
                yield SourceVideo(
                    platform="bunny",
                    id=f"{library}/{guid}",
                    title=need(item.get("title") or guid, str, where, f"items[{i}].title"),
                    folder_id=need(
                        item.get("collectionId"), (str, type(None)), where, f"items[{i}].collectionId"
                    )
                    or None,
                    source_url=f"https://iframe.mediadelivery.net/embed/{library}/{guid}",
                    created=need(
                        item.get("dateUploaded"), (str, type(None)), where, f"items[{i}].dateUploaded"
                    ),
                    duration=listed_seconds(item.get("length")),
                )
            if len(items) < self.per_page:
                return

    def resolve_download(self, video_id: str) -> DownloadLink:
        """The file of `<library>/<guid>` on the pull zone: its original when the library keeps originals,
        else the MP4 fallback of its highest resolution. NotFoundError when the video is gone;
        PlatformError when the library keeps neither."""
        library, _, guid = video_id.partition("/")
        where = f"bunny video {video_id}"
        if not guid:
            raise PlatformError(f"{where}: expected <library>/<video id>")
        body = need(self.get_json(f"/library/{library}/videos/{guid}", what=where), dict, where, "body")
        original = f"{self.cdn_url}/{guid}/original"
        if self._exists(original, where):
            return DownloadLink(url=original, original=True, label="original")
        resolutions = str(body.get("availableResolutions") or "").split(",")
        heights = sorted(
            (int(m.group(1)) for r in resolutions if (m := _HEIGHT.match(r.strip()))), reverse=True
        )
        for height in heights:
            url = f"{self.cdn_url}/{guid}/play_{height}p.mp4"
            if self._exists(url, where):
                return DownloadLink(url=url, original=False, label=f"play_{height}p.mp4", height=height)
        raise PlatformError(
            f"{where}: the library keeps no original files and has no MP4 fallback for it: enable MP4"
            " fallback (or keeping originals) in the library's encoding settings"
        )

    def _exists(self, url: str, where: str) -> bool:
        """Whether the pull zone has the file (a HEAD; 404 says no; 401 / 403, a pull zone with token
        authentication, is a setting to fix). The pull zone needs no key."""
        try:
            answer = httpx.head(url, timeout=30.0, follow_redirects=True)
        except httpx.TransportError as exc:
            raise PlatformError(
                f"{where}: the pull zone at {safe_uri(self.cdn_url)} does not answer ({type(exc).__name__})"
            ) from None
        if answer.status_code >= 500:
            raise PlatformError(f"{where}: the pull zone answered {answer.status_code}")
        if answer.status_code in (401, 403):
            raise PlatformConfigError(
                f"{where}: the pull zone ({CDN_VARIABLE}) refused the file ({answer.status_code}): turn off"
                " its token authentication, or point the variable at the library's own pull zone"
            )
        return answer.status_code < 300

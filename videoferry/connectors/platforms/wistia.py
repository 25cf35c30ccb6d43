"""The Wistia client: the token's checks, the listing (/v1/medias.json page by page, in a stable order, until
a short page) and one media's download link (its OriginalFile asset, else the best MP4).

Wistia's public reference: https://wistia.com/support/developers/making-api-requests (tokens, paging, rate
limits) and https://wistia.com/support/developers/data-api (medias, projects, assets)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from videoferry.connectors.platforms.base import (
    DownloadLink,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    StillProcessing,
    need,
)
from videoferry.connectors.platforms.common import SourceClient

DEFAULT_API_URL = "https://api.wistia.com"
TOKEN_VARIABLE = "VIDEOFERRY_WISTIA_TOKEN"
URL_VARIABLE = "VIDEOFERRY_WISTIA_API_URL"
#: Wistia allows 600 requests a minute per account; the client keeps under it itself.
RATE_PER_MINUTE = 600
PER_PAGE = 100  # the most a page holds
#: The order the listing asks for: oldest first, so a media added while it runs lands on a later page.
ORDER = {"sort_by": "created", "sort_direction": "1"}
#: Progressive MP4 assets, best first when they tie on pixels.
MP4_ASSETS = ("HdMp4VideoFile", "MdMp4VideoFile", "Mp4VideoFile", "IphoneVideoFile")


class WistiaClient(SourceClient):
    """api.wistia.com (or VIDEOFERRY_WISTIA_API_URL) with the token, at most 600 calls a minute, each 429's
    Retry-After respected."""

    platform = "wistia"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL
    rate_per_minute = RATE_PER_MINUTE

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        super().__init__(base_url, token, **options)
        #: Medias the last listing left out because they are not videos.
        self.skipped = 0
        #: The medias left out, as `<hashed_id> (<type>)`, in listing order.
        self.left_out: list[str] = []

    def check_access(self, project: str | None = None) -> str:
        """The token works and may read medias (with their assets), and `project` exists; PlatformConfigError
        saying what to fix otherwise. Returns the account's name."""
        account = need(
            self.get_json("/v1/account.json", what="the account"), dict, "GET /v1/account.json", "body"
        )
        try:
            self.get_json("/v1/medias.json", {"per_page": 1}, what="the medias")
        except PlatformConfigError:
            raise PlatformConfigError(
                f"the Wistia token ({TOKEN_VARIABLE}) may not read medias: make a token with the"
                " permission to read all data (Account Settings, API access)"
            ) from None
        if project is not None:
            try:
                self.get_json(f"/v1/projects/{project}.json", what=f"project {project}")
            except NotFoundError:
                raise PlatformConfigError(
                    f"Wistia has no project {project} (wistia:project/{project})"
                ) from None
        return str(account.get("name") or "")

    def list_videos(self, project: str | None = None) -> Iterator[SourceVideo]:
        """Every video media of the account (or of one project), oldest first, page by page until a short
        page; medias that are not videos (images, audio, documents) are left out and counted in `skipped`."""
        self.skipped = 0
        self.left_out = []
        params: dict[str, Any] = {"per_page": PER_PAGE, **ORDER}
        if project is not None:
            params["project_id"] = project
        page = 0
        while True:
            page += 1
            where = f"wistia page {page} of the medias" + (f" of project {project}" if project else "")
            items = need(
                self.get_json("/v1/medias.json", {**params, "page": page}, what=where), list, where, "body"
            )
            for i, item in enumerate(items):
                video = self._video(need(item, dict, where, f"[{i}]"), where, i)
                if video is not None:
                    yield video
            if len(items) < PER_PAGE:
                return

    def _video(self, item: dict[str, Any], where: str, i: int) -> SourceVideo | None:
        hashed = need(item.get("hashed_id"), str, where, f"[{i}].hashed_id")
        if not hashed:
            raise PlatformError(f"{where}, field [{i}].hashed_id: empty")
        kind = need(item.get("type"), str, where, f"[{i}].type")
        if kind != "Video":
            self.skipped += 1
            self.left_out.append(f"{hashed} ({kind[:20]})")
            return None
        project = need(item.get("project") or {}, dict, where, f"[{i}].project")
        tags = need(item.get("tags") or [], list, where, f"[{i}].tags")
        return SourceVideo(
            platform="wistia",
            id=hashed,
            title=need(item.get("name"), str, where, f"[{i}].name"),
            description=need(item.get("description"), (str, type(None)), where, f"[{i}].description") or None,
            tags=tuple(need(t, str, where, f"[{i}].tags[{j}]") for j, t in enumerate(tags)),
            folder=project.get("name") or None,
            folder_id=project.get("hashed_id") or None,
            source_url=f"https://fast.wistia.net/embed/iframe/{hashed}",
            created=need(item.get("created"), (str, type(None)), where, f"[{i}].created"),
            duration=_number(item.get("duration")),
            size=_file_size(item.get("assets")),
        )

    def resolve_download(self, hashed_id: str) -> DownloadLink:
        """The link to fetch the media's file now: its OriginalFile asset, else the MP4 asset with the most
        pixels. NotFoundError when the media is gone; PlatformError when it has no file."""
        where = f"wistia media {hashed_id}"
        body = need(self.get_json(f"/v1/medias/{hashed_id}.json", what=where), dict, where, "body")
        status = body.get("status")
        if status == "failed":
            raise PlatformError(f"wistia media {hashed_id} failed processing at wistia (status failed)")
        if status is not None and status != "ready":  # queued, processing
            raise StillProcessing(f"wistia media {hashed_id} is not ready yet (status {str(status)[:40]})")
        choices: list[DownloadLink] = []
        for i, asset in enumerate(need(body.get("assets") or [], list, where, "assets")):
            asset = need(asset, dict, where, f"assets[{i}]")
            kind = str(asset.get("type") or "")
            original = kind == "OriginalFile"
            if not original and not (kind in MP4_ASSETS or asset.get("contentType") == "video/mp4"):
                continue
            choices.append(
                DownloadLink(
                    url=need(asset.get("url"), str, where, f"assets[{i}].url"),
                    original=original,
                    label=kind,
                    width=asset.get("width"),
                    height=asset.get("height"),
                    size=asset.get("fileSize"),
                )
            )
        if not choices:
            raise PlatformError(f"wistia media {hashed_id} has no OriginalFile or MP4 asset")
        return max(choices, key=lambda c: (c.original, (c.width or 0) * (c.height or 0)))


def _number(value: Any) -> float | None:
    """A listing's number, None when it is not one (a size or duration is only shown, never trusted)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _file_size(assets: Any) -> int | None:
    """The fileSize of the asset resolve_download would take (OriginalFile, else the largest MP4)."""
    if not isinstance(assets, list):
        return None
    sized = [a for a in assets if isinstance(a, dict) and isinstance(a.get("fileSize"), int)]
    original = [a for a in sized if a.get("type") == "OriginalFile"]
    mp4 = [a for a in sized if a.get("type") in MP4_ASSETS or a.get("contentType") == "video/mp4"]
    best = original or sorted(mp4, key=lambda a: (a.get("width") or 0) * (a.get("height") or 0))[-1:]
    return int(best[0]["fileSize"]) if best else None

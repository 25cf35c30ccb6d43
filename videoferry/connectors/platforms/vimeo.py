"""The Vimeo client: the token's checks, the listing (/me/videos or a folder, following `paging.next`),
chapters, and one video's download link resolved when it is needed.

Vimeo's public reference: collections and paging https://developer.vimeo.com/api/common-formats; rate limits
https://developer.vimeo.com/guidelines/rate-limiting; scopes https://developer.vimeo.com/api/authentication;
download links https://help.vimeo.com/hc/en-us/articles/12427806914577."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx

from videoferry.connectors.platforms.base import (
    Chapter,
    DownloadLink,
    MalformedPage,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    StillProcessing,
    need,
    parse_time,
)
from videoferry.connectors.platforms.common import SourceClient

DEFAULT_API_URL = "https://api.vimeo.com"
#: A video's `status` while Vimeo still uploads or transcodes it (its file comes later).
PROCESSING_STATUSES = frozenset({"uploading", "transcode_starting", "transcoding"})
TOKEN_VARIABLE = "VIDEOFERRY_VIMEO_TOKEN"
URL_VARIABLE = "VIDEOFERRY_VIMEO_API_URL"
#: Listing private videos and reading download links needs all three.
NEEDED_SCOPES = ("public", "private", "video_files")
#: Plans whose accounts get no download links through the API (a Standard plan or higher is needed).
PLANS_WITHOUT_DOWNLOADS = frozenset({"basic", "free", "plus", "starter"})
PER_PAGE = 100  # the most a page holds
#: Vimeo's privacy.view where it maps onto the service's privacy_type; the others are left unset.
PRIVACY = {"anybody": "anywhere", "nobody": "nowhere"}
_VIDEO_URI = re.compile(r"^/videos/(\d+)$")
_FOLDER_URI = re.compile(r"/projects/(\d+)$")


class VimeoClient(SourceClient):
    """api.vimeo.com (or VIDEOFERRY_VIMEO_API_URL) with the token; its own rate limit from X-RateLimit-*."""

    platform = "vimeo"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        accept = {"Accept": "application/vnd.vimeo.*+json;version=3.4"}
        super().__init__(base_url, token, headers=accept, **options)

    def note_limits(self, answer: httpx.Response) -> None:
        """X-RateLimit-Remaining 0 (or a 429): no call before X-RateLimit-Reset."""
        super().note_limits(answer)
        remaining = answer.headers.get("X-RateLimit-Remaining")
        reset = parse_time(answer.headers.get("X-RateLimit-Reset"))
        if reset is not None and (
            answer.status_code == 429 or (remaining is not None and remaining.strip() == "0")
        ):
            self.pause_until(reset)

    # -- checks before anything is listed ------------------------------------------------------------------

    def check_access(self) -> str:
        """The token works, has the scopes downloads need, and the account's plan gives download links;
        PlatformConfigError saying what to fix otherwise. Returns the account's plan."""
        verified = need(
            self.get_json("/oauth/verify", what="the token (GET /oauth/verify)"),
            dict,
            "GET /oauth/verify",
            "body",
        )
        scopes = set(str(verified.get("scope") or "").split())
        missing = [s for s in NEEDED_SCOPES if s not in scopes]
        if missing:
            raise PlatformConfigError(
                f"the Vimeo token ({TOKEN_VARIABLE}) lacks the scope(s) {', '.join(missing)}: generate"
                f" a token with the scopes {' '.join(NEEDED_SCOPES)} (developer.vimeo.com/apps: your app,"
                " Authentication)"
            )
        me = need(self.get_json("/me", what="the account (GET /me)"), dict, "GET /me", "body")
        plan = str(me.get("account") or "")
        if plan in PLANS_WITHOUT_DOWNLOADS:
            raise PlatformConfigError(
                f"the Vimeo account's plan ({plan!r}, as GET /me says) gives no download links through the"
                " API: a Standard plan or higher is needed to move its originals"
            )
        return plan

    # -- listing -------------------------------------------------------------------------------------------

    def list_videos(self, folder: str | None = None, *, chapters: bool = True) -> Iterator[SourceVideo]:
        """Every video of the account (or of one folder), oldest first, following `paging.next`; with
        `chapters`, each video's chapters (one call each). MalformedPage names the page and field."""
        if folder is None:
            path, what = "/me/videos", "the account's videos"
        else:
            path, what = f"/me/projects/{folder}/videos", f"folder {folder}"
        params: dict[str, Any] | None = {"per_page": PER_PAGE, "sort": "date", "direction": "asc"}
        page = 0
        next_path: str | None = path
        while next_path:
            page += 1
            where = f"vimeo page {page} of {what}"
            try:
                body = self.get_json(next_path, params, what=where)
            except NotFoundError:
                if folder is not None and page == 1:
                    raise PlatformConfigError(
                        f"Vimeo has no folder {folder} in this account (vimeo:folder/{folder})"
                    ) from None
                raise
            params = None  # paging.next carries them
            body = need(body, dict, where, "body")
            items = need(body.get("data"), list, where, "data")
            paging = need(body.get("paging"), dict, where, "paging")
            for i, item in enumerate(items):
                video = self._video(need(item, dict, where, f"data[{i}]"), where, i)
                if chapters:
                    video = self._with_chapters(video)
                yield video
            next_path = need(paging.get("next"), (str, type(None)), where, "paging.next")

    def _video(self, item: dict[str, Any], where: str, i: int) -> SourceVideo:
        uri = need(item.get("uri"), str, where, f"data[{i}].uri")
        match = _VIDEO_URI.match(uri)
        if not match:
            raise MalformedPage(f"{where}, field data[{i}].uri: expected '/videos/<id>', got {uri[:80]!r}")
        name = need(item.get("name"), str, where, f"data[{i}].name")
        privacy = need(item.get("privacy") or {}, dict, where, f"data[{i}].privacy")
        view = need(privacy.get("view"), (str, type(None)), where, f"data[{i}].privacy.view")
        tags = need(item.get("tags") or [], list, where, f"data[{i}].tags")
        names = tuple(
            need(
                need(t, dict, where, f"data[{i}].tags[{j}]").get("name"),
                str,
                where,
                f"data[{i}].tags[{j}].name",
            )
            for j, t in enumerate(tags)
        )
        folder = need(item.get("parent_folder") or {}, dict, where, f"data[{i}].parent_folder")
        folder_match = _FOLDER_URI.search(str(folder.get("uri") or ""))
        return SourceVideo(
            platform="vimeo",
            id=match.group(1),
            title=name,
            description=need(item.get("description"), (str, type(None)), where, f"data[{i}].description"),
            tags=names,
            privacy_type=PRIVACY.get(view or ""),
            source_privacy=view,
            folder=folder.get("name") or None,
            folder_id=folder_match.group(1) if folder_match else None,
            source_url=need(item.get("link"), (str, type(None)), where, f"data[{i}].link"),
            created=need(item.get("created_time"), (str, type(None)), where, f"data[{i}].created_time"),
            duration=_number(item.get("duration")),
            size=_file_size(item.get("download")),
        )

    def _with_chapters(self, video: SourceVideo) -> SourceVideo:
        """The video with its chapters (None when it went since the listing: nothing to carry)."""
        found: list[Chapter] = []
        next_path: str | None = f"/videos/{video.id}/chapters"
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        page = 0
        while next_path:
            page += 1
            where = f"vimeo page {page} of the chapters of video {video.id}"
            try:
                body = need(self.get_json(next_path, params, what=where), dict, where, "body")
            except NotFoundError:
                return video
            params = None
            for i, item in enumerate(need(body.get("data"), list, where, "data")):
                item = need(item, dict, where, f"data[{i}]")
                title = need(item.get("title"), str, where, f"data[{i}].title")
                time = need(item.get("timecode"), (int, float), where, f"data[{i}].timecode")
                found.append(Chapter(float(time), title))
            next_path = need(
                need(body.get("paging") or {}, dict, where, "paging").get("next"),
                (str, type(None)),
                where,
                "paging.next",
            )
        return _replace(video, chapters=tuple(found))

    # -- one video's file, when its create is due ----------------------------------------------------------

    def resolve_download(self, video_id: str) -> DownloadLink:
        """The link to fetch the video's file now: its `download` entry of quality `source` (the original),
        else the progressive MP4 with the most pixels. NotFoundError when the video is gone;
        PlatformError when it offers no file."""
        where = f"vimeo video {video_id}"
        body = need(self.get_json(f"/videos/{video_id}", what=where), dict, where, "body")
        status = body.get("status")
        if status in PROCESSING_STATUSES:
            raise StillProcessing(f"vimeo video {video_id} is not available yet (status {status})")
        if status is not None and status != "available":  # an upload or transcode error, over a quota
            raise PlatformError(f"vimeo video {video_id} is not available (status {str(status)[:40]})")
        entries = need(body.get("download") or [], list, where, "download")
        choices: list[DownloadLink] = []
        for i, entry in enumerate(entries):
            entry = need(entry, dict, where, f"download[{i}]")
            link = need(entry.get("link"), str, where, f"download[{i}].link")
            quality = str(entry.get("quality") or "")
            original = quality == "source"
            if not original and entry.get("type") != "video/mp4":
                continue
            expires = parse_time(entry.get("expires"))
            choices.append(
                DownloadLink(
                    url=link,
                    original=original,
                    label=str(entry.get("rendition") or quality),
                    width=entry.get("width"),
                    height=entry.get("height"),
                    size=entry.get("size"),
                    expires=datetime.fromtimestamp(expires).astimezone() if expires else None,
                )
            )
        if not choices:
            raise PlatformError(f"vimeo video {video_id} offers no downloadable file (no `download` entry)")
        return max(choices, key=lambda c: (c.original, (c.width or 0) * (c.height or 0)))


def _replace(video: SourceVideo, **changes: Any) -> SourceVideo:
    import dataclasses

    return dataclasses.replace(video, **changes)


def _number(value: Any) -> float | None:
    """A listing's number, None when it is not one (a size or duration is only shown, never trusted)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _file_size(entries: Any) -> int | None:
    """The size of the file resolve_download would take (the `source` entry, else the largest MP4)."""
    if not isinstance(entries, list):
        return None
    sized = [e for e in entries if isinstance(e, dict) and isinstance(e.get("size"), int)]
    original = [e for e in sized if e.get("quality") == "source"]
    mp4 = [e for e in sized if e.get("type") == "video/mp4"]
    best = original or sorted(mp4, key=lambda e: (e.get("width") or 0) * (e.get("height") or 0))[-1:]
    return int(best[0]["size"]) if best else None

"""The api.video client: the API key exchanged for an access token (again before it ends), the listing
(/videos oldest first, page by page until the last page) and one video's MP4 asset (only videos with MP4
support have one; the others get a reason that says so).

api.video's public reference: https://docs.api.video/reference/api/Authentication (POST /auth/api-key),
https://docs.api.video/reference/api/Videos (list, get, `mp4Support`, `assets.mp4`) and
https://docs.api.video/reference/rate-limiting (`X-RateLimit-*` headers, 429)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from videoferry.connectors.platforms.base import (
    DownloadLink,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    need,
)
from videoferry.connectors.platforms.common import SourceClient

DEFAULT_API_URL = "https://ws.api.video"
TOKEN_VARIABLE = "VIDEOFERRY_APIVIDEO_TOKEN"
URL_VARIABLE = "VIDEOFERRY_APIVIDEO_API_URL"
PER_PAGE = 100  # the most a page holds
#: An access token is exchanged again this long before api.video says it ends (seconds).
RENEW_MARGIN = 60.0


class NoMp4Error(PlatformError):
    """The video has no MP4 asset: MP4 support was not enabled when it was uploaded."""


class ApiVideoClient(SourceClient):
    """ws.api.video (or VIDEOFERRY_APIVIDEO_API_URL): the API key (VIDEOFERRY_APIVIDEO_TOKEN) exchanged at
    POST /auth/api-key for a bearer access token; api.video's X-RateLimit-Retry-After respected."""

    platform = "apivideo"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        super().__init__(base_url, "", **options)
        self._api_key = token
        self._access_until = 0.0
        #: The videos of the last listing without MP4 support (nothing to fetch), by id.
        self.no_mp4: list[str] = []

    def auth_headers(self, token: str) -> dict[str, str]:
        return {}  # the access token is set once exchanged

    def note_limits(self, answer: httpx.Response) -> None:
        """api.video says the wait in X-RateLimit-Retry-After (seconds) on a 429."""
        wait = answer.headers.get("X-RateLimit-Retry-After")
        if answer.status_code == 429 and wait and wait.strip().isdigit():
            self.pause_until(time.time() + int(wait))
            return
        super().note_limits(answer)

    def _authorize(self) -> None:
        if time.time() < self._access_until - RENEW_MARGIN:
            return
        self._http.headers.pop("Authorization", None)
        body = need(
            self.call("POST", "/auth/api-key", body={"apiKey": self._api_key}, what="an access token").json(),
            dict,
            "POST /auth/api-key",
            "body",
        )
        access = need(body.get("access_token"), str, "POST /auth/api-key", "access_token")
        lifetime = need(body.get("expires_in"), int, "POST /auth/api-key", "expires_in")
        self._http.headers["Authorization"] = f"Bearer {access}"
        self._access_until = time.time() + lifetime

    def get_json(self, path: str, params: Mapping[str, Any] | None = None, *, what: str) -> Any:
        """GET as the base client does, with an access token; one refused (the token ended early at
        api.video) is exchanged again once before the refusal counts."""
        self._authorize()
        try:
            return super().get_json(path, params, what=what)
        except PlatformConfigError:
            self._access_until = 0.0
            self._authorize()  # a refused API key raises here, naming the variable
            return super().get_json(path, params, what=what)

    def check_access(self, folder: str | None = None) -> str:
        """The API key is taken and may list videos; PlatformConfigError saying what to fix otherwise."""
        self.get_json("/videos", {"currentPage": 1, "pageSize": 1}, what="the videos")
        return ""

    def list_videos(self, folder: str | None = None) -> Iterator[SourceVideo]:
        """Every video of the project, oldest first, page by page until `pagination.pagesTotal`; those
        without MP4 support are listed too and named in `no_mp4`."""
        self.no_mp4 = []
        page = 0
        while True:
            page += 1
            where = f"apivideo page {page} of the videos"
            params = {"currentPage": page, "pageSize": PER_PAGE, "sortBy": "createdAt", "sortOrder": "asc"}
            body = need(self.get_json("/videos", params, what=where), dict, where, "body")
            items = need(body.get("data"), list, where, "data")
            pagination = need(body.get("pagination"), dict, where, "pagination")
            total = need(pagination.get("pagesTotal"), int, where, "pagination.pagesTotal")
            for i, item in enumerate(items):
                yield self._video(need(item, dict, where, f"data[{i}]"), where, i)
            if page >= total or len(items) < PER_PAGE:
                return

    def _video(self, item: dict[str, Any], where: str, i: int) -> SourceVideo:
        ident = need(item.get("videoId"), str, where, f"data[{i}].videoId")
        if not ident:
            raise PlatformError(f"{where}, field data[{i}].videoId: empty")
        tags = need(item.get("tags") or [], list, where, f"data[{i}].tags")
        public = need(item.get("public", True), bool, where, f"data[{i}].public")
        if not item.get("mp4Support"):
            self.no_mp4.append(ident)
        return SourceVideo(
            platform="apivideo",
            id=ident,
            title=need(item.get("title") or ident, str, where, f"data[{i}].title"),
            description=need(item.get("description"), (str, type(None)), where, f"data[{i}].description")
            or None,
            tags=tuple(need(t, str, where, f"data[{i}].tags[{j}]") for j, t in enumerate(tags)),
            privacy_type="anywhere" if public else None,
            source_privacy="public" if public else "private",
            source_url=f"https://embed.api.video/vod/{ident}",
            created=need(item.get("createdAt"), (str, type(None)), where, f"data[{i}].createdAt"),
        )

    def resolve_download(self, video_id: str) -> DownloadLink:
        """The video's MP4 asset (api.video keeps no original to fetch). NoMp4Error saying why when the
        video has no MP4 support; NotFoundError when it is gone."""
        where = f"apivideo video {video_id}"
        body = need(self.get_json(f"/videos/{video_id}", what=where), dict, where, "body")
        assets = need(body.get("assets") or {}, dict, where, "assets")
        if not body.get("mp4Support") or not assets.get("mp4"):
            raise NoMp4Error(
                f"{where} has no MP4 asset: it was uploaded without MP4 support (mp4Support false), and"
                " api.video offers no other file to fetch; enable MP4 support and upload it again, or move it"
                " by hand"
            )
        return DownloadLink(url=need(assets["mp4"], str, where, "assets.mp4"), original=False, label="mp4")

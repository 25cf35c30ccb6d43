"""The Cloudflare Stream client: the token's checks, the listing (the account's /stream oldest first by
creation time, pages joined on `after` without losing or repeating videos that share a second) and one
video's download link (an MP4 download asked for, then waited for until ready: Stream keeps no original).

Cloudflare's public reference: https://developers.cloudflare.com/fundamentals/api/how-to/make-api-calls/
(tokens, the envelope), https://developers.cloudflare.com/api/resources/stream/methods/list/ (listing),
https://developers.cloudflare.com/stream/viewing-videos/download-videos/ (MP4 downloads) and
https://developers.cloudflare.com/fundamentals/api/reference/limits/ (1200 requests per five minutes)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from connectors.platforms.base import (
    DownloadLink,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    need,
)
from connectors.platforms.common import SourceClient, listed_seconds
from connectors.platforms.prepare import (
    DEFAULT_READINESS,
    Readiness,
    readiness_from_env,
    wait_until_ready,
)

DEFAULT_API_URL = "https://api.cloudflare.com/client/v4"
TOKEN_VARIABLE = "VIDEOFERRY_CLOUDFLARE_TOKEN"
URL_VARIABLE = "VIDEOFERRY_CLOUDFLARE_API_URL"
ACCOUNT_VARIABLE = "VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID"
#: 1200 requests per five minutes per user: 240 a minute.
RATE_PER_MINUTE = 240
PER_PAGE = 1000  # the most a page holds
SIGNED = "signed URLs required"


def _second(stamp: str) -> datetime:
    """A video's `created`, cut to the whole second (the precision `after` is compared at)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).replace(microsecond=0)


class CloudflareClient(SourceClient):
    """api.cloudflare.com (or VIDEOFERRY_CLOUDFLARE_API_URL) with the API token, for one account, at most
    240 calls a minute, each 429 waited for."""

    platform = "cloudflare"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL
    rate_per_minute = RATE_PER_MINUTE

    def __init__(
        self,
        base_url: str,
        token: str,
        account: str,
        *,
        per_page: int = PER_PAGE,
        readiness: Readiness = DEFAULT_READINESS,
        **options: Any,
    ) -> None:
        super().__init__(base_url, token, **options)
        self.account = account
        self.per_page = per_page
        self.readiness = readiness
        self.skipped = 0

    @classmethod
    def settings_from_env(cls, env: Mapping[str, str]) -> dict[str, Any]:
        """The account (VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID; PlatformConfigError when it is not set) and how
        long an MP4 download is waited for (connectors/platforms/prepare.readiness_from_env)."""
        account = env.get(ACCOUNT_VARIABLE, "").strip()
        if not account:
            raise PlatformConfigError(
                f"{ACCOUNT_VARIABLE} is not set: export the Cloudflare account id in it"
            )
        return {"account": account, "readiness": readiness_from_env(env)}

    def result(self, method: str, path: str, params: Mapping[str, Any] | None = None, *, what: str) -> Any:
        """The `result` of an answer in Cloudflare's envelope (MalformedPage naming `what` otherwise)."""
        answer = self.call(method, path, params, what=what)
        try:
            body = answer.json()
        except ValueError:
            raise PlatformError(f"{what}: the answer is not JSON") from None
        return need(need(body, dict, what, "body").get("result"), (list, dict), what, "result")

    def check_access(self, folder: str | None = None) -> str:
        """The token is active and may read the account's Stream videos; PlatformConfigError otherwise."""
        self.result("GET", "/user/tokens/verify", what="the token")
        try:
            self.result("GET", f"/accounts/{self.account}/stream", {"limit": 1}, what="the Stream videos")
        except (PlatformConfigError, NotFoundError):
            raise PlatformConfigError(
                f"the Cloudflare token ({TOKEN_VARIABLE}) may not read Stream videos of account"
                f" {self.account} ({ACCOUNT_VARIABLE}): make a token with Stream Read and Stream Edit"
            ) from None
        return ""

    def list_videos(self, folder: str | None = None) -> Iterator[SourceVideo]:
        """Every video of the account, oldest first (those not ready to stream are left out and counted in
        `skipped`). Each next page starts one second before the last
        video's creation second (`after` is compared at one-second precision, so a page may end inside a
        second); videos seen already are not yielded again. A full page of videos seen already (more videos
        in one second than a page holds) asks again with a bigger page, up to the most a page holds."""
        self.skipped = 0
        seen: set[str] = set()
        after: datetime | None = None
        size = self.per_page
        page = 0
        while True:
            page += 1
            where = f"cloudflare page {page} of the Stream videos"
            params: dict[str, Any] = {"asc": "true", "limit": size}
            if after is not None:
                params["after"] = after.isoformat().replace("+00:00", "Z")
            items = need(
                self.result("GET", f"/accounts/{self.account}/stream", params, what=where),
                list,
                where,
                "result",
            )
            fresh = 0
            for i, item in enumerate(items):
                item = need(item, dict, where, f"result[{i}]")
                video = self._video(item, where, i)
                after = _second(video.created or "") - timedelta(seconds=1)
                if video.id in seen:
                    continue
                seen.add(video.id)
                fresh += 1
                if item.get("readyToStream") is False:  # still uploading or encoding: no download yet
                    self.skipped += 1
                    continue
                yield video
            if len(items) < size:
                return
            if fresh == 0:
                if size >= PER_PAGE:
                    raise PlatformError(
                        f"{where}: more than {PER_PAGE} videos share the second after"
                        f" {params['after']}"
                        " and Cloudflare lists them by the second: the listing cannot go past it"
                    )
                size = min(PER_PAGE, size * 2)

    def _video(self, item: dict[str, Any], where: str, i: int) -> SourceVideo:
        uid = need(item.get("uid"), str, where, f"result[{i}].uid")
        if not uid:
            raise PlatformError(f"{where}, field result[{i}].uid: empty")
        created = need(item.get("created"), str, where, f"result[{i}].created")
        try:
            _second(created)
        except ValueError:
            raise PlatformError(
                f"{where}, field result[{i}].created: not a date-time: {created[:40]!r}"
            ) from None
        meta = need(item.get("meta") or {}, dict, where, f"result[{i}].meta")
        signed = bool(item.get("requireSignedURLs"))
        return SourceVideo(
            platform="cloudflare",
            id=uid,
            title=need(meta.get("name") or uid, str, where, f"result[{i}].meta.name"),
            privacy_type=None if signed else "anywhere",
            source_privacy=SIGNED if signed else "public",
            source_url=f"https://iframe.videodelivery.net/{uid}",
            created=created,
            duration=listed_seconds(item.get("duration")),
        )

    def resolve_download(self, uid: str) -> DownloadLink:
        """The video's MP4 download (Stream keeps no original): asked for when it does not exist yet, then
        waited for until ready (bounded by `readiness`). NotFoundError when the video is gone;
        PlatformError when Cloudflare could not make the MP4."""
        where = f"cloudflare video {uid}"
        path = f"/accounts/{self.account}/stream/{uid}/downloads"
        state = need(self.result("GET", path, what=f"the downloads of {where}"), dict, where, "result")
        if "default" not in state:
            state = need(self.result("POST", path, what=f"an MP4 download of {where}"), dict, where, "result")

        def look() -> dict[str, Any] | None:
            nonlocal state
            default = need(state.get("default"), dict, where, "result.default")
            status = default.get("status")
            if status == "ready" and default.get("url"):
                return default
            if status == "error":
                raise PlatformError(f"{where}: Cloudflare could not make its MP4 download")
            state = need(self.result("GET", path, what=f"the downloads of {where}"), dict, where, "result")
            return None

        ready = wait_until_ready(look, self.readiness, f"the MP4 download of {where}")
        return DownloadLink(
            url=need(ready.get("url"), str, where, "result.default.url"), original=False, label="default.mp4"
        )

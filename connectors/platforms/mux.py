"""The Mux client: the access token's check, the listing (/video/v1/assets page by page until a short page)
and one asset's download link (its master through temporary master access, else the best static MP4).

Mux's public reference: https://www.mux.com/docs/core/make-api-requests (basic auth with the access token's
id and secret), https://docs.mux.com/api-reference#video/operation/list-assets (assets, paging),
https://www.mux.com/docs/guides/download-for-offline-editing (master access, 24 hours) and
https://www.mux.com/docs/guides/enable-static-mp4-renditions (static MP4s on stream.mux.com)."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from connectors.platforms.base import (
    DownloadLink,
    PlatformConfigError,
    PlatformError,
    SourceVideo,
    StillProcessing,
    need,
)
from connectors.platforms.common import SourceClient, listed_seconds
from connectors.platforms.prepare import (
    DEFAULT_READINESS,
    Readiness,
    readiness_from_env,
    wait_until_ready,
)

DEFAULT_API_URL = "https://api.mux.com"
DEFAULT_STREAM_URL = "https://stream.mux.com"
TOKEN_VARIABLE = "VIDEOFERRY_MUX_TOKEN"
URL_VARIABLE = "VIDEOFERRY_MUX_API_URL"
STREAM_VARIABLE = "VIDEOFERRY_MUX_STREAM_URL"
#: Mux allows about 5 API requests a second; the client keeps under it itself.
RATE_PER_MINUTE = 300
PER_PAGE = 100  # the most a page holds
#: A master's URL works for 24 hours after it is ready.
MASTER_LIFETIME = timedelta(hours=24)
#: The privacy a signed playback policy is said with in the inventory (it does not carry over).
SIGNED = "signed playback policy"


class MuxClient(SourceClient):
    """api.mux.com (or VIDEOFERRY_MUX_API_URL) with the access token (`id:secret` in VIDEOFERRY_MUX_TOKEN,
    sent as basic auth), at most 300 calls a minute, each 429 waited for."""

    platform = "mux"
    token_variable = TOKEN_VARIABLE
    url_variable = URL_VARIABLE
    default_url = DEFAULT_API_URL
    rate_per_minute = RATE_PER_MINUTE

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        stream_url: str = DEFAULT_STREAM_URL,
        readiness: Readiness = DEFAULT_READINESS,
        **options: Any,
    ) -> None:
        if ":" not in token:
            raise PlatformConfigError(
                f"{TOKEN_VARIABLE} must be the access token's id and secret as ID:SECRET"
            )
        super().__init__(base_url, token, **options)
        self.stream_url = stream_url.rstrip("/")
        self.readiness = readiness
        self.skipped = 0

    def auth_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(token.encode()).decode()}

    @classmethod
    def settings_from_env(cls, env: Mapping[str, str]) -> dict[str, Any]:
        """Mux's stream host (VIDEOFERRY_MUX_STREAM_URL, else stream.mux.com) and how long a master is
        waited for (connectors/platforms/prepare.readiness_from_env)."""
        return {
            "stream_url": env.get(STREAM_VARIABLE, "").strip() or DEFAULT_STREAM_URL,
            "readiness": readiness_from_env(env),
        }

    def check_access(self, folder: str | None = None) -> str:
        """The token works and may read assets; PlatformConfigError saying what to fix otherwise."""
        self.get_json("/video/v1/assets", {"limit": 1, "page": 1}, what="the assets")
        return ""

    def list_videos(self, folder: str | None = None) -> Iterator[SourceVideo]:
        """Every asset of the environment (Mux lists newest first), page by page until a short page;
        assets that are not ready (still preparing, errored) are left out and counted in `skipped`."""
        self.skipped = 0
        page = 0
        while True:
            page += 1
            where = f"mux page {page} of the assets"
            body = need(
                self.get_json("/video/v1/assets", {"limit": PER_PAGE, "page": page}, what=where),
                dict,
                where,
                "body",
            )
            items = need(body.get("data"), list, where, "data")
            for i, item in enumerate(items):
                video = self._video(need(item, dict, where, f"data[{i}]"), where, i)
                if video is not None:
                    yield video
            if len(items) < PER_PAGE:
                return

    def _video(self, item: dict[str, Any], where: str, i: int) -> SourceVideo | None:
        ident = need(item.get("id"), str, where, f"data[{i}].id")
        if not ident:
            raise PlatformError(f"{where}, field data[{i}].id: empty")
        if item.get("status") != "ready":
            self.skipped += 1
            return None
        meta = need(item.get("meta") or {}, dict, where, f"data[{i}].meta")
        title = meta.get("title") or item.get("passthrough") or ident
        playbacks = need(item.get("playback_ids") or [], list, where, f"data[{i}].playback_ids")
        public = [p.get("id") for p in playbacks if isinstance(p, dict) and p.get("policy") == "public"]
        others = [p.get("id") for p in playbacks if isinstance(p, dict) and p.get("policy") != "public"]
        signed = not public and bool(playbacks)
        created = need(item.get("created_at"), (str, int), where, f"data[{i}].created_at")
        try:
            stamp = datetime.fromtimestamp(int(created), UTC).isoformat()
        except ValueError:
            raise PlatformError(f"{where}, field data[{i}].created_at: not Unix seconds") from None
        return SourceVideo(
            platform="mux",
            id=ident,
            title=need(title, str, where, f"data[{i}].meta.title"),
            privacy_type=None if signed else "anywhere",
            source_privacy=SIGNED if signed else "public",
            source_url=f"https://player.mux.com/{public[0]}" if public else None,
            created=stamp,
            duration=listed_seconds(item.get("duration")),
            player_ids=tuple(f"mux:{p}" for p in [*public, *others] if isinstance(p, str) and p),
        )

    def resolve_download(self, asset_id: str) -> DownloadLink:
        """The asset's master (its original quality) through temporary master access: enabled when it is
        not, then waited for until ready (bounded by `readiness`); when Mux cannot make the master, its
        best static MP4 rendition on a public playback id. NotFoundError when the asset is gone."""
        where = f"mux asset {asset_id}"
        asset = self._asset(asset_id)
        status = asset.get("status")
        if status == "preparing":
            raise StillProcessing(f"{where} is not available yet (status preparing at Mux)")
        if status != "ready":
            raise PlatformError(f"{where} is {status!r} at Mux, not ready: nothing to fetch")
        if asset.get("master_access") != "temporary":
            self.call(
                "PUT",
                f"/video/v1/assets/{asset_id}/master-access",
                body={"master_access": "temporary"},
                what=f"master access of {where}",
            )
            asset = self._asset(asset_id)

        def look() -> dict[str, Any] | None:
            nonlocal asset
            master = need(asset.get("master") or {}, dict, where, "master")
            status = master.get("status")
            if status == "ready" and master.get("url"):
                return master
            if status == "errored":
                return {"status": "errored"}
            asset = self._asset(asset_id)
            return None

        master = wait_until_ready(look, self.readiness, f"the master of {where}")
        if master.get("status") == "ready":
            return DownloadLink(
                url=need(master.get("url"), str, where, "master.url"),
                original=True,
                label="master",
                expires=datetime.now(UTC) + MASTER_LIFETIME,
            )
        return self._rendition(asset, where)

    def _asset(self, asset_id: str) -> dict[str, Any]:
        where = f"mux asset {asset_id}"
        body = need(self.get_json(f"/video/v1/assets/{asset_id}", what=where), dict, where, "body")
        return need(body.get("data"), dict, where, "data")  # type: ignore[no-any-return]

    def _rendition(self, asset: dict[str, Any], where: str) -> DownloadLink:
        playbacks = asset.get("playback_ids") or []
        public = [p["id"] for p in playbacks if isinstance(p, dict) and p.get("policy") == "public"]
        renditions = need(asset.get("static_renditions") or {}, dict, where, "static_renditions")
        files = [f for f in renditions.get("files") or [] if isinstance(f, dict) and f.get("ext") == "mp4"]
        if not public or not files:
            raise PlatformError(
                f"{where}: Mux could not prepare its master, and it has no static MP4 rendition on a public"
                " playback id"
            )
        best = max(files, key=lambda f: int(f.get("width") or 0) * int(f.get("height") or 0))
        return DownloadLink(
            url=f"{self.stream_url}/{public[0]}/{best['name']}",
            original=False,
            label=str(best["name"]),
            width=best.get("width"),
            height=best.get("height"),
            size=int(best["filesize"]) if str(best.get("filesize", "")).isdigit() else None,
        )

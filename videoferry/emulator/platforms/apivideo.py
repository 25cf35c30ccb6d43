"""The api.video stand-in: the parts of the api.video API a library's export reads, from its public
reference.

Sources, each cited where its rule is enforced:
- REF_AUTH https://docs.api.video/reference/api/Authentication : POST /auth/api-key `{"apiKey"}` answers
  `access_token` (Bearer, `expires_in` 3600 s) and `refresh_token`; a bad key is refused.
- REF_LIST https://docs.api.video/reference/api/Videos#list-all-video-objects : GET /videos with
  `currentPage` (from 1), `pageSize` (at most 100, default 25), `sortBy` (createdAt, title, ...) and
  `sortOrder` (asc | desc); `{"data": [...], "pagination": {currentPage, pageSize, pagesTotal, itemsTotal,
  currentPageItems, links}}`; a video's `videoId`, `title`, `description`, `tags`, `public`, `mp4Support`,
  `createdAt`, `assets` (`mp4` only when the video has MP4 support). GET /videos/{videoId}.
- REF_LIMITS https://docs.api.video/reference/rate-limiting : `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
  `X-RateLimit-Retry-After` (seconds); 429 when none remain.
What the references leave open is written in emulator/platforms/README.md.
"""

from __future__ import annotations

import math
import secrets
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from videoferry.emulator.platforms.common import (
    Endpoint,
    FixedWindow,
    Handler,
    Links,
    StandinState,
    file_bytes,
    guarded,
    json_response,
    signed_file,
    standin_app,
)

DEFAULT_TOKEN = "apivideo-standin-key"
MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE = 100, 25  # REF_LIST
TOKEN_LIFETIME = 3600.0  # REF_AUTH
LINK_LIFETIME = 10 * 365 * 24 * 3600.0


def _problem(title: str, status: int, headers: dict[str, str] | None = None) -> Response:
    return json_response(
        {"type": "https://docs.api.video/reference", "title": title, "status": status}, status, headers
    )


class ApiVideoState(StandinState):
    """The project's API keys, the access tokens handed out, the videos, and the faults and limits."""

    def __init__(self) -> None:
        super().__init__()
        self._fresh()

    def _fresh(self) -> None:
        self.restart(FixedWindow(limit=0, seconds=60.0))
        self.keys: set[str] = {DEFAULT_TOKEN}
        self.access: dict[str, float] = {}  # access token -> expiry epoch
        self.videos: dict[str, dict[str, Any]] = {}
        self.links = Links(LINK_LIFETIME)
        self.token_lifetime = TOKEN_LIFETIME

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):
            self._fresh()
        self.keys.update(body.get("tokens", []))
        for number, video in enumerate(body.get("videos", []), start=len(self.videos) + 1):
            ident = video.get("videoId") or f"vi{number:020d}"
            created = (
                video.get("createdAt") or datetime.fromtimestamp(1_700_000_000 + number * 60, UTC).isoformat()
            )
            self.videos[ident] = {**video, "videoId": ident, "createdAt": created}
        return {"token": DEFAULT_TOKEN, "videos": list(self.videos)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, 60.0)
        if "token_lifetime" in body:
            self.token_lifetime = float(body["token_lifetime"])
        if body.get("expire_tokens"):
            self.access.clear()
        if body.get("expire_links"):
            self.links.expire_all()
        return {}

    def delete(self, ident: str) -> bool:
        return self.videos.pop(ident, None) is not None

    def shown(self, video: dict[str, Any], at: float) -> dict[str, Any]:
        ident = video["videoId"]
        mp4 = bool(video.get("mp4Support", True))
        assets = {
            "iframe": f'<iframe src="https://embed.api.video/vod/{ident}"></iframe>',
            "player": f"https://embed.api.video/vod/{ident}",
            "hls": f"https://vod.api.video/vod/{ident}/hls/manifest.m3u8",
            "thumbnail": f"https://vod.api.video/vod/{ident}/thumbnail.jpg",
        }
        if mp4:  # REF_LIST: the mp4 asset only with MP4 support
            path, _ = self.links.sign(f"/vod/{ident}/mp4/source.mp4", at)
            assets["mp4"] = self.base_url + path
        body = {
            "videoId": ident,
            "title": video.get("title", ident),
            "description": video.get("description", ""),
            "tags": list(video.get("tags", [])),
            "public": bool(video.get("public", True)),
            "mp4Support": mp4,
            "createdAt": video["createdAt"],
            "updatedAt": video["createdAt"],
            "assets": assets,
        }
        body.update(video.get("broken", {}))
        return body


def apivideo_app(state: ApiVideoState) -> Starlette:
    """The stand-in's ASGI app: auth, the API routes behind tokens, rate limit and faults, files, control."""

    def api(endpoint: Endpoint, *, token: bool = True) -> Handler:
        return guarded(state, lambda request, at: _guard(request, at, token), endpoint)

    def _guard(request: Request, at: float, token: bool) -> Response | None:
        if token:
            scheme, _, access = request.headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or state.access.get(access.strip(), 0) <= at:  # REF_AUTH
                return _problem("Unauthorized", 401)
        allowed, remaining, reset = state.window.take("project", at)  # REF_LIMITS
        if not allowed:
            wait = str(max(1, math.ceil(reset - at)))
            return _problem("Too many requests", 429, {"X-RateLimit-Retry-After": wait})
        fault = state.faults.next()
        if fault is not None:
            return _problem("Service unavailable", fault)
        return None

    async def auth(request: Request, at: float) -> Response:
        key = (await request.json()).get("apiKey")
        if key not in state.keys:  # REF_AUTH
            return _problem("Authentication failed", 401)
        access = secrets.token_urlsafe(24)
        state.access[access] = at + state.token_lifetime
        return json_response(
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": int(state.token_lifetime),
                "refresh_token": secrets.token_urlsafe(24),
            }
        )

    async def videos(request: Request, at: float) -> Response:
        q = request.query_params
        try:
            page = int(q.get("currentPage", "1"))
            size = int(q.get("pageSize", str(DEFAULT_PAGE_SIZE)))
        except ValueError:
            return _problem("currentPage and pageSize must be numbers", 400)
        if page < 1 or not 1 <= size <= MAX_PAGE_SIZE:  # REF_LIST
            return _problem(f"pageSize must be 1 to {MAX_PAGE_SIZE}, currentPage from 1", 400)
        field = {"createdAt": "createdAt", "title": "title"}.get(q.get("sortBy", "createdAt"), "createdAt")
        ordered = sorted(
            state.videos.values(),
            key=lambda v: (str(v.get(field, "")), v["videoId"]),
            reverse=q.get("sortOrder", "asc") == "desc",
        )
        chosen = ordered[(page - 1) * size : page * size]
        total = len(ordered)
        return json_response(
            {
                "data": [state.shown(v, at) for v in chosen],
                "pagination": {
                    "currentPage": page,
                    "pageSize": size,
                    "pagesTotal": max(1, math.ceil(total / size)),
                    "itemsTotal": total,
                    "currentPageItems": len(chosen),
                    "links": [],
                },
            }
        )

    async def one_video(request: Request, at: float) -> Response:
        video = state.videos.get(request.path_params["video_id"])
        if video is None:
            return _problem("Video not found", 404)
        return json_response(state.shown(video, at))

    def file(request: Request) -> Response | None:
        ident = request.path_params["video_id"]
        if ident not in state.videos:
            return None
        return Response(file_bytes(state.videos[ident], f"{ident}/mp4"), media_type="video/mp4")

    routes = [
        Route("/auth/api-key", api(auth, token=False), methods=["POST"]),
        Route("/videos", api(videos)),
        Route("/videos/{video_id}", api(one_video)),
        Route(
            "/vod/{video_id}/mp4/source.mp4",
            signed_file(state, lambda r: f"/vod/{r.path_params['video_id']}/mp4/source.mp4", file),
        ),
    ]
    return standin_app(state, routes)

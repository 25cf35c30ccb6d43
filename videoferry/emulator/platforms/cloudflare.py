"""The Cloudflare Stream stand-in: the parts of the Cloudflare API (v4) a Stream library's export reads,
from its public reference.

Sources, each cited where its rule is enforced:
- REF_API https://developers.cloudflare.com/fundamentals/api/how-to/make-api-calls/ : `Authorization:
  Bearer` API tokens, GET /user/tokens/verify, the envelope `{success, errors, messages, result}`.
- REF_LIST https://developers.cloudflare.com/api/resources/stream/methods/list/ : GET
  /accounts/{account_id}/stream with `asc` (default false: newest first), `after` / `before` (videos
  created after / before a date-time), `limit` (at most 1000); a video's `uid`, `created`, `meta.name`,
  `requireSignedURLs`, `readyToStream`, `duration`.
- REF_DOWNLOADS https://developers.cloudflare.com/stream/viewing-videos/download-videos/ : POST
  /accounts/{account_id}/stream/{uid}/downloads asks for an MP4; GET the same path shows
  `result.default.status` (inprogress | ready | error), `percentComplete` and `url`.
- REF_LIMITS https://developers.cloudflare.com/fundamentals/api/reference/limits/ : 1200 requests per five
  minutes per user, then 429.
What the references leave open is written in emulator/platforms/README.md (one-second precision of
`after`, among them).
"""

from __future__ import annotations

import math
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

DEFAULT_TOKEN = "cloudflare-standin-token"
ACCOUNT = "standin-account"
MAX_LIMIT = 1000  # REF_LIST
RATE_LIMIT, RATE_WINDOW = 1200, 300.0  # REF_LIMITS
#: How many reads of a download see it `inprogress` before it is `ready` (the control API sets it).
PREPARE_READS = 2
LINK_LIFETIME = 10 * 365 * 24 * 3600.0


def envelope(result: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """REF_API: every answer in the envelope."""
    ok = status < 400
    errors = [] if ok else [{"code": status, "message": str(result)}]
    return json_response(
        {"success": ok, "errors": errors, "messages": [], "result": result if ok else None}, status, headers
    )


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class CloudflareState(StandinState):
    """The account, its tokens and videos, the downloads asked for, and the faults and limits."""

    def __init__(self) -> None:
        super().__init__()
        self._fresh()

    def _fresh(self) -> None:
        self.restart(FixedWindow(RATE_LIMIT, RATE_WINDOW))
        self.tokens: set[str] = {DEFAULT_TOKEN}
        self.videos: dict[str, dict[str, Any]] = {}
        self.downloads: dict[str, int] = {}  # uid -> reads since it was asked for
        self.links = Links(LINK_LIFETIME)
        self.prepare_reads = PREPARE_READS

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):
            self._fresh()
        self.tokens.update(body.get("tokens", []))
        for number, video in enumerate(body.get("videos", []), start=len(self.videos) + 1):
            uid = video.get("uid") or f"{number:032x}"
            created = video.get("created") or datetime.fromtimestamp(
                1_700_000_000 + number * 60, UTC
            ).isoformat().replace("+00:00", "Z")
            self.videos[uid] = {**video, "uid": uid, "created": created}
        return {"token": DEFAULT_TOKEN, "account": ACCOUNT, "videos": list(self.videos)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, RATE_WINDOW)
        if "prepare_reads" in body:
            self.prepare_reads = int(body["prepare_reads"])
        if body.get("expire_links"):
            self.links.expire_all()
        return {}

    def delete(self, uid: str) -> bool:
        self.downloads.pop(uid, None)
        return self.videos.pop(uid, None) is not None

    def shown(self, video: dict[str, Any]) -> dict[str, Any]:
        body = {
            "uid": video["uid"],
            "created": video["created"],
            "modified": video["created"],
            "meta": {"name": video.get("name", video["uid"])},
            "duration": video.get("duration", 1.0),
            "readyToStream": bool(video.get("ready", True)),
            "status": {"state": "ready" if video.get("ready", True) else "inprogress"},
            "requireSignedURLs": bool(video.get("signed", False)),
        }
        body.update(video.get("broken", {}))
        return body

    def download(self, uid: str, at: float, *, read: bool) -> dict[str, Any]:
        if read:
            self.downloads[uid] += 1
        reads = self.downloads[uid]
        if self.videos[uid].get("download_fails"):
            return {"default": {"status": "error", "percentComplete": 0.0}}
        if reads <= self.prepare_reads:
            done = round(100.0 * reads / (self.prepare_reads + 1), 1)
            return {"default": {"status": "inprogress", "percentComplete": done}}
        path, _ = self.links.sign(f"/files/{uid}/downloads/default.mp4", at)
        return {"default": {"status": "ready", "percentComplete": 100.0, "url": self.base_url + path}}


def cloudflare_app(state: CloudflareState) -> Starlette:
    """The stand-in's ASGI app: the API routes behind auth, rate limit and faults, the files, control."""

    def api(endpoint: Endpoint) -> Handler:
        return guarded(state, _guard, endpoint)

    def _guard(request: Request, at: float) -> Response | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() not in state.tokens:  # REF_API
            return envelope("Invalid API Token", 401)
        allowed, _, reset = state.window.take("user", at)  # REF_LIMITS
        if not allowed:
            return envelope("Rate limited", 429, {"Retry-After": str(max(1, math.ceil(reset - at)))})
        fault = state.faults.next()
        if fault is not None:
            return envelope("Service unavailable", fault)
        if request.path_params.get("account_id", ACCOUNT) != ACCOUNT:
            return envelope("Authentication error: not a member of this account", 403)
        return None

    async def verify(request: Request, at: float) -> Response:
        return envelope({"id": "standin", "status": "active"})

    async def listing(request: Request, at: float) -> Response:
        q = request.query_params
        try:
            limit = int(q.get("limit", str(MAX_LIMIT)))
            after = math.floor(_when(q["after"])) if q.get("after") else None
            before = math.floor(_when(q["before"])) if q.get("before") else None
        except ValueError as exc:
            return envelope(f"bad parameter: {exc}", 400)
        if not 1 <= limit <= MAX_LIMIT:
            return envelope(f"limit must be 1 to {MAX_LIMIT}", 400)
        asc = q.get("asc", "false").lower() == "true"
        chosen = [
            v
            for v in state.videos.values()
            # README: `after` and `before` compare at one-second precision, strictly
            if (after is None or math.floor(_when(v["created"])) > after)
            and (before is None or math.floor(_when(v["created"])) < before)
        ]
        chosen.sort(key=lambda v: (_when(v["created"]), v["uid"]), reverse=not asc)
        return envelope([state.shown(v) for v in chosen[:limit]])

    async def downloads(request: Request, at: float) -> Response:
        uid = request.path_params["uid"]
        if uid not in state.videos:
            return envelope("Video not found", 404)
        if request.method == "POST":  # REF_DOWNLOADS: asking again changes nothing
            state.downloads.setdefault(uid, 0)
            return envelope(state.download(uid, at, read=False))
        if uid not in state.downloads:
            return envelope({})
        return envelope(state.download(uid, at, read=True))

    def file(request: Request) -> Response | None:
        uid = request.path_params["uid"]
        if uid not in state.videos:
            return None
        return Response(file_bytes(state.videos[uid], f"{uid}/default"), media_type="video/mp4")

    routes = [
        Route("/user/tokens/verify", api(verify)),
        Route("/accounts/{account_id}/stream", api(listing)),
        Route("/accounts/{account_id}/stream/{uid}/downloads", api(downloads), methods=["GET", "POST"]),
        Route(
            "/files/{uid}/downloads/default.mp4",
            signed_file(state, lambda r: f"/files/{r.path_params['uid']}/downloads/default.mp4", file),
        ),
    ]
    return standin_app(state, routes)

"""The Mux stand-in: the parts of the Mux Video API (v1) a library's export reads, from its public reference.

Sources, each cited where its rule is enforced:
- REF_AUTH https://www.mux.com/docs/core/make-api-requests : HTTP basic auth, the access token's id as the
  user name and its secret as the password; 401 otherwise.
- REF_ASSETS https://docs.mux.com/api-reference#video/operation/list-assets : GET /video/v1/assets with
  `limit` (at most 100, default 25) and `page` (from 1), newest first, `{"data": [...]}`; GET
  /video/v1/assets/{ASSET_ID}; an asset's `id`, `created_at` (Unix seconds as a string), `status`,
  `duration`, `playback_ids` (`id`, `policy` public | signed), `passthrough`, `meta.title`,
  `master_access`, `master` (`status` preparing | ready | errored, `url`), `static_renditions`.
- REF_MASTER https://www.mux.com/docs/guides/download-for-offline-editing : PUT
  /video/v1/assets/{ASSET_ID}/master-access `{"master_access": "temporary"}`; `master.status` goes from
  preparing to ready, then `master.url` works for 24 hours, after which `master_access` is `none` again.
- REF_MP4 https://www.mux.com/docs/guides/enable-static-mp4-renditions : static renditions at
  https://stream.mux.com/{PLAYBACK_ID}/{name}.mp4 (`highest.mp4`, `1080p.mp4`, ...), public playback ids.
What the references leave open is written in emulator/platforms/README.md.
"""

from __future__ import annotations

import base64
import math
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
    Logged,
    StandinState,
    file_bytes,
    guarded,
    json_response,
    now,
    signed_file,
    standin_app,
)

DEFAULT_TOKEN = "mux-standin-id:mux-standin-secret"
MAX_LIMIT = 100  # REF_ASSETS
DEFAULT_LIMIT = 25  # REF_ASSETS
MASTER_LIFETIME = 24 * 3600.0  # REF_MASTER
#: How many reads of an asset see its master `preparing` before it is `ready` (the control API sets it).
PREPARE_READS = 1
DEFAULT_FILES = (
    {"name": "highest.mp4", "width": 1920, "height": 1080},
    {"name": "low.mp4", "width": 640, "height": 360},
)


def _error(kind: str, message: str, status: int, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": {"type": kind, "messages": [message]}}, status, headers)


class MuxState(StandinState):
    """The environment's access tokens and assets, and the faults and limits the control API sets."""

    def __init__(self) -> None:
        super().__init__()
        self._fresh()

    def _fresh(self) -> None:
        self.restart(FixedWindow(limit=0, seconds=1.0))
        token_id, _, secret = DEFAULT_TOKEN.partition(":")
        self.tokens: dict[str, str] = {token_id: secret}
        self.assets: dict[str, dict[str, Any]] = {}
        self.links = Links(MASTER_LIFETIME)
        self.prepare_reads = PREPARE_READS

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):
            self._fresh()
        for token_id, secret in body.get("tokens", {}).items():
            self.tokens[token_id] = secret
        for number, asset in enumerate(body.get("assets", []), start=len(self.assets) + 1):
            ident = asset.get("id") or f"asset{number:06d}"
            self.assets[ident] = {
                "created_at": str(1_700_000_000 + number * 60),
                "master_access": "none",
                **asset,
                "id": ident,
                "_reads": 0,
            }
        return {"token": DEFAULT_TOKEN, "assets": list(self.assets)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, 1.0)
        if "prepare_reads" in body:
            self.prepare_reads = int(body["prepare_reads"])
        if body.get("expire_links"):  # REF_MASTER: the 24 hours have passed: master access is none again
            self.links.expire_all()
            for asset in self.assets.values():
                asset["master_access"] = "none"
        return {}

    def delete(self, ident: str) -> bool:
        return self.assets.pop(ident, None) is not None

    def shown(self, asset: dict[str, Any], at: float, *, read: bool = False) -> dict[str, Any]:
        """The asset as the API shows it; `read` counts a read towards its master being ready."""
        ident = asset["id"]
        body: dict[str, Any] = {
            "id": ident,
            "created_at": asset["created_at"],
            "status": asset.get("status", "ready"),
            "duration": asset.get("duration", 1.0),
            "playback_ids": [
                {"id": f"pb{ident}", "policy": asset.get("policy", "public")},
            ],
            "master_access": asset["master_access"],
            "mp4_support": "standard" if asset.get("static_renditions", True) else "none",
        }
        for name in ("passthrough", "meta"):
            if name in asset:
                body[name] = asset[name]
        body.update(asset.get("broken", {}))  # fields replaced: a malformed page
        if asset.get("static_renditions", True):
            body["static_renditions"] = {
                "status": "ready",
                "files": [
                    {**f, "ext": "mp4", "filesize": str(len(file_bytes(f, f"{ident}/{f['name']}")))}
                    for f in DEFAULT_FILES
                ],
            }
        if asset["master_access"] == "temporary":
            if read:
                asset["_reads"] += 1
            if asset.get("master_fails"):
                body["master"] = {"status": "errored"}
            elif asset["_reads"] <= self.prepare_reads:
                body["master"] = {"status": "preparing"}
            else:
                path, _ = self.links.sign(f"/master/{ident}/master.mp4", at)
                body["master"] = {"status": "ready", "url": self.base_url + path}
        return body


def mux_app(state: MuxState) -> Starlette:
    """The stand-in's ASGI app: the API routes behind auth, rate limit and faults, the files, control."""

    def api(endpoint: Endpoint) -> Handler:
        return guarded(state, _guard, endpoint)

    def _guard(request: Request, at: float) -> Response | None:
        scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
        try:
            token_id, _, secret = base64.b64decode(encoded).decode().partition(":")
        except ValueError:
            token_id, secret = "", ""
        if scheme.lower() != "basic" or state.tokens.get(token_id) != secret or not secret:  # REF_AUTH
            return _error("unauthorized", "Unauthorized request", 401)
        allowed, _, reset = state.window.take("environment", at)
        if not allowed:
            wait = str(max(1, math.ceil(reset - at)))
            return _error("too_many_requests", "Too many requests", 429, {"Retry-After": wait})
        fault = state.faults.next()
        if fault is not None:
            return _error("service_unavailable", "Service unavailable", fault)
        return None

    async def assets(request: Request, at: float) -> Response:
        try:
            limit = int(request.query_params.get("limit", DEFAULT_LIMIT))
            page = int(request.query_params.get("page", "1"))
        except ValueError:
            return _error("invalid_parameters", "limit and page must be numbers", 400)
        if not 1 <= limit <= MAX_LIMIT or page < 1:  # REF_ASSETS
            return _error("invalid_parameters", f"limit must be 1 to {MAX_LIMIT}, page from 1", 400)
        ordered = sorted(state.assets.values(), key=lambda a: (int(a["created_at"]), a["id"]), reverse=True)
        chosen = ordered[(page - 1) * limit : page * limit]
        return json_response({"data": [state.shown(a, at) for a in chosen]})

    async def one_asset(request: Request, at: float) -> Response:
        asset = state.assets.get(request.path_params["asset_id"])
        if asset is None:
            return _error("not_found", "Asset not found", 404)
        return json_response({"data": state.shown(asset, at, read=True)})

    async def master_access(request: Request, at: float) -> Response:
        asset = state.assets.get(request.path_params["asset_id"])
        if asset is None:
            return _error("not_found", "Asset not found", 404)
        wanted = (await request.json()).get("master_access")
        if wanted not in ("temporary", "none"):  # REF_MASTER
            return _error("invalid_parameters", "master_access must be temporary or none", 400)
        if wanted != asset["master_access"]:
            asset["master_access"], asset["_reads"] = wanted, 0
        return json_response({"data": state.shown(asset, at)})

    def master_file(request: Request) -> Response | None:
        ident = request.path_params["asset_id"]
        if ident not in state.assets:
            return None
        return Response(file_bytes(state.assets[ident], f"{ident}/master"), media_type="video/mp4")

    async def rendition(request: Request) -> Response:
        playback, name = request.path_params["playback_id"], request.path_params["name"]
        with state.lock:
            asset = state.assets.get(playback.removeprefix("pb"))
            public = asset is not None and asset.get("policy", "public") == "public"
            files = [f for f in DEFAULT_FILES if f["name"] == name]
            status = 200 if asset and files and asset.get("static_renditions", True) else 404
            if status == 200 and not public:  # REF_MP4: a signed playback id needs a token
                status = 403
            state.log.append(Logged(now(), "GET", request.url.path, status))
        if status != 200:
            return Response(b"refused", status_code=status)
        return Response(file_bytes(files[0], f"{playback.removeprefix('pb')}/{name}"), media_type="video/mp4")

    routes = [
        Route("/video/v1/assets", api(assets)),
        Route("/video/v1/assets/{asset_id}", api(one_asset)),
        Route("/video/v1/assets/{asset_id}/master-access", api(master_access), methods=["PUT"]),
        Route(
            "/master/{asset_id}/master.mp4",
            signed_file(state, lambda r: f"/master/{r.path_params['asset_id']}/master.mp4", master_file),
        ),
        Route("/stream/{playback_id}/{name}", rendition),
    ]
    return standin_app(state, routes)

"""The Wistia stand-in: the parts of the Wistia Data API (v1) a library's export reads, from its public
reference.

Sources, each cited where its rule is enforced:
- REF_REQUESTS https://wistia.com/support/developers/making-api-requests : bearer tokens
  (`Authorization: Bearer`), tokens made with chosen permissions, JSON by the `.json` extension; paging by
  `page` and `per_page` (at most 100); rate limits with 429 and `Retry-After`.
- REF_DATA https://wistia.com/support/developers/data-api : GET /v1/account.json, GET /v1/projects.json,
  GET /v1/projects/{hashed_id}.json, GET /v1/medias.json (`page`, `per_page`, `sort_by` name|created|updated,
  `sort_direction` 1 ascending / 0 descending, `project_id`), GET /v1/medias/{hashed_id}.json; a media's
  `hashed_id`, `name`, `description`, `type`, `created`, `project`, and `assets` (`type` such as
  OriginalFile, HdMp4VideoFile, Mp4VideoFile; `url`, `width`, `height`, `fileSize`, `contentType`).
- REF_CAPTIONS https://wistia.com/support/developers/data-api#captions : GET
  /v1/medias/{hashed_id}/captions.json, an array of captions (`language`, `english_name`, `text`: SRT).
What the references leave open is written in emulator/platforms/README.md.
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

DEFAULT_TOKEN = "wistia-standin-token"
#: The permissions a token may have here: `read` (read all data, assets included) and `upload`.
ALL_PERMISSIONS = ("read", "upload")
#: REF_REQUESTS: 600 requests per minute per account.
RATE_PER_MINUTE = 600
MAX_PER_PAGE = 100  # REF_REQUESTS
#: Asset URLs are not documented to expire; the stand-in's last for ten years unless expired by control.
LINK_LIFETIME = 10 * 365 * 24 * 3600.0
DEFAULT_ASSETS = (
    {"type": "OriginalFile", "width": 1920, "height": 1080, "contentType": "video/mp4"},
    {"type": "HdMp4VideoFile", "width": 1280, "height": 720, "contentType": "video/mp4"},
    {"type": "Mp4VideoFile", "width": 640, "height": 360, "contentType": "video/mp4"},
)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


class WistiaState(StandinState):
    """The account, its tokens, projects and medias, and the faults and limits the control API sets."""

    def __init__(self) -> None:
        super().__init__(FixedWindow(limit=RATE_PER_MINUTE, seconds=60.0))
        self.tokens: dict[str, set[str]] = {DEFAULT_TOKEN: set(ALL_PERMISSIONS)}
        self.projects: dict[str, dict[str, Any]] = {}
        self.medias: dict[str, dict[str, Any]] = {}
        self.links = Links(LINK_LIFETIME)

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):  # a fresh account: the same objects, emptied (routes hold them)
            self.tokens.clear()
            self.tokens[DEFAULT_TOKEN] = set(ALL_PERMISSIONS)
            self.projects, self.medias = {}, {}
            self.restart(FixedWindow(RATE_PER_MINUTE, 60.0))
            self.links = Links(LINK_LIFETIME)
        for token, permissions in body.get("tokens", {}).items():
            self.tokens[token] = set(permissions)
        for number, project in enumerate(body.get("projects", []), start=len(self.projects) + 1):
            self.projects[project["hashed_id"]] = {**project, "id": 5000 + number}
        for number, media in enumerate(body.get("medias", []), start=len(self.medias) + 1):
            hashed = media.get("hashed_id") or f"m{number:09d}"
            created = media.get("created") or _iso(1_700_000_000 + number * 60)
            self.medias[hashed] = {**media, "hashed_id": hashed, "id": 9000 + number, "created": created}
        return {"token": DEFAULT_TOKEN, "medias": list(self.medias), "projects": list(self.projects)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, 60.0)
        if "link_lifetime" in body:
            self.links.lifetime = float(body["link_lifetime"])
        if body.get("expire_links"):
            self.links.expire_all()
        return {}

    def delete(self, hashed_id: str) -> bool:
        return self.medias.pop(hashed_id, None) is not None

    def project(self, hashed: str) -> dict[str, Any]:
        p = self.projects[hashed]
        count = sum(1 for m in self.medias.values() if m.get("project") == hashed)
        return {"id": p["id"], "hashedId": hashed, "name": p["name"], "mediaCount": count}

    def media(self, record: dict[str, Any], at: float) -> dict[str, Any]:
        hashed = record["hashed_id"]
        project = record.get("project")
        shown: dict[str, Any] = {
            "id": record["id"],
            "hashed_id": hashed,
            "name": record.get("name", f"Media {hashed}"),
            "description": record.get("description", ""),
            "type": record.get("type", "Video"),
            "status": "ready",
            "created": record["created"],
            "updated": record["created"],
            "duration": record.get("duration", 1.0),
            "tags": list(record.get("tags", [])),
            "project": (
                {
                    "id": self.projects[project]["id"],
                    "name": self.projects[project]["name"],
                    "hashed_id": project,
                }
                if project in self.projects
                else None
            ),
            "assets": [self._asset(hashed, a, at) for a in self.assets(record)],
        }
        shown.update(record.get("broken", {}))  # a malformed representation the control API asked for
        return shown

    def assets(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        return list(record.get("assets") or DEFAULT_ASSETS)

    def _asset(self, hashed: str, asset: dict[str, Any], at: float) -> dict[str, Any]:
        path, _ = self.links.sign(f"/deliveries/{hashed}/{asset['type']}.bin", at)
        return {
            "url": self.base_url + path,
            "width": asset.get("width"),
            "height": asset.get("height"),
            "fileSize": len(file_bytes(asset, f"{hashed}/{asset['type']}")),
            "contentType": asset.get("contentType", "video/mp4"),
            "type": asset["type"],
        }


def _ordered(request: Request, medias: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """REF_DATA: sort_by name|created|updated and sort_direction (1 ascending, the default; 0 descending);
    without sort_by, by id (ties by id always)."""
    field = request.query_params.get("sort_by", "id")
    reverse = request.query_params.get("sort_direction", "1") == "0"
    key = {"name": "name", "created": "created", "updated": "created"}.get(field)
    if key is None:
        return sorted(medias, key=lambda m: m["id"], reverse=reverse)
    return sorted(medias, key=lambda m: (str(m.get(key, "")), m["id"]), reverse=reverse)


def wistia_app(state: WistiaState) -> Starlette:
    """The stand-in's ASGI app: the API routes behind auth, rate limit and faults, asset files, control."""

    def api(endpoint: Endpoint, permission: str | None = "read") -> Handler:
        return guarded(state, lambda request, at: _guard(request, at, permission), endpoint)

    def _guard(request: Request, at: float, permission: str | None) -> Response | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        if token not in state.tokens:  # REF_REQUESTS
            return json_response({"error": "Invalid credentials"}, 401)
        allowed, _, reset = state.window.take("account", at)  # REF_REQUESTS: per account
        if not allowed:
            wait = max(1, math.ceil(reset - at))
            return json_response({"error": "Rate limit exceeded"}, 429, {"Retry-After": str(wait)})
        fault = state.faults.next()
        if fault is not None:
            return json_response({"error": "Service unavailable"}, fault)
        if permission is not None and permission not in state.tokens[token]:
            return json_response({"error": "This token does not have permission to read this data"}, 403)
        return None

    def _paged(request: Request, items: list[Any]) -> Response:
        try:
            page = max(1, int(request.query_params.get("page", "1")))
            per_page = min(MAX_PER_PAGE, max(1, int(request.query_params.get("per_page", str(MAX_PER_PAGE)))))
        except ValueError:
            return json_response({"error": "page and per_page must be numbers"}, 400)
        return json_response(items[(page - 1) * per_page : page * per_page])

    async def account(request: Request, at: float) -> Response:
        return json_response(
            {
                "id": 1,
                "name": "Stand-in account",
                "url": "https://standin.wistia.com",
                "mediaCount": len(state.medias),
            }
        )

    async def projects(request: Request, at: float) -> Response:
        return _paged(
            request, [state.project(h) for h in sorted(state.projects, key=lambda h: state.projects[h]["id"])]
        )

    async def one_project(request: Request, at: float) -> Response:
        hashed = request.path_params["hashed_id"]
        if hashed not in state.projects:
            return json_response({"error": "Project not found"}, 404)
        return json_response(state.project(hashed))

    async def medias(request: Request, at: float) -> Response:
        chosen = list(state.medias.values())
        project = request.query_params.get("project_id")
        if project:
            chosen = [
                m
                for m in chosen
                if m.get("project") == project
                or str(state.projects.get(m.get("project", ""), {}).get("id")) == project
            ]
        return _paged(request, [state.media(m, at) for m in _ordered(request, chosen)])

    async def one_media(request: Request, at: float) -> Response:
        record = state.medias.get(request.path_params["hashed_id"])
        if record is None:
            return json_response({"error": "Media not found"}, 404)
        return json_response(state.media(record, at))

    async def captions(request: Request, at: float) -> Response:
        """REF_CAPTIONS: the media's captions, their text inline."""
        record = state.medias.get(request.path_params["hashed_id"])
        if record is None:
            return json_response({"error": "Media not found"}, 404)
        return json_response(
            [
                {
                    "language": c.get("language", "eng"),
                    "english_name": c.get("english_name", "English"),
                    "text": c.get("text", ""),
                }
                for c in record.get("captions", [])
            ]
        )

    def delivery_path(request: Request) -> str:
        return f"/deliveries/{request.path_params['hashed_id']}/{request.path_params['kind']}.bin"

    def delivery(request: Request) -> Response | None:
        hashed, kind = request.path_params["hashed_id"], request.path_params["kind"]
        record = state.medias.get(hashed)
        chosen = [a for a in state.assets(record) if a["type"] == kind] if record else []
        if not chosen:
            return None
        return Response(file_bytes(chosen[0], f"{hashed}/{kind}"), media_type=chosen[0].get("contentType"))

    routes = [
        Route("/v1/account.json", api(account, None)),
        Route("/v1/projects.json", api(projects)),
        Route("/v1/projects/{hashed_id}.json", api(one_project)),
        Route("/v1/medias.json", api(medias)),
        Route("/v1/medias/{hashed_id}.json", api(one_media)),
        Route("/v1/medias/{hashed_id}/captions.json", api(captions)),
        Route("/deliveries/{hashed_id}/{kind}.bin", signed_file(state, delivery_path, delivery)),
    ]
    return standin_app(state, routes)

"""The Bunny Stream stand-in: the parts of the Bunny Stream API a video library's export reads, and the
library's pull zone (its files), from the public reference.

Sources, each cited where its rule is enforced:
- REF_AUTH https://docs.bunny.net/reference/api-overview : the `AccessKey` header with the library's own
  Stream API key (not the account's key); 401 otherwise.
- REF_LIST https://docs.bunny.net/reference/video_list : GET /library/{libraryId}/videos with `page` (from
  1), `itemsPerPage` (default 100, at most 1000), `orderBy` (date); `{totalItems, currentPage,
  itemsPerPage, items}`; a video's `guid`, `videoLibraryId`, `title`, `dateUploaded`, `status` (4 finished),
  `width`, `height`, `availableResolutions` ("240p,720p"), `collectionId`, `metaTags`, `hasMP4Fallback`.
  GET /library/{libraryId}/videos/{videoId}.
- REF_FILES https://docs.bunny.net/stream/storage-structure : the pull zone's
  `/{video_id}/original` (only when the library keeps original files) and `/{video_id}/play_{height}p.mp4`
  (only with MP4 fallback enabled).
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
    Logged,
    StandinState,
    file_bytes,
    guarded,
    json_response,
    now,
    standin_app,
)

DEFAULT_TOKEN = "bunny-standin-key"
LIBRARY = "4242"
MAX_PER_PAGE, DEFAULT_PER_PAGE = 1000, 100  # REF_LIST
DEFAULT_RESOLUTIONS = "360p,720p"


class BunnyState(StandinState):
    """The libraries (their keys and settings) and videos, and the faults and limits the control sets."""

    def __init__(self) -> None:
        super().__init__()
        self._fresh()

    def _fresh(self) -> None:
        self.restart(FixedWindow(limit=0, seconds=1.0))
        self.libraries: dict[str, dict[str, Any]] = {
            LIBRARY: {"key": DEFAULT_TOKEN, "keep_original_files": True, "mp4_fallback": True}
        }
        self.videos: dict[str, dict[str, Any]] = {}

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):
            self._fresh()
        for library in body.get("libraries", []):
            ident = str(library["id"])
            self.libraries[ident] = {**self.libraries.get(ident, {}), **library}
            self.libraries[ident].setdefault("key", DEFAULT_TOKEN)
        for number, video in enumerate(body.get("videos", []), start=len(self.videos) + 1):
            guid = video.get("guid") or f"00000000-0000-4000-8000-{number:012d}"
            uploaded = video.get("dateUploaded") or datetime.fromtimestamp(
                1_700_000_000 + number * 60, UTC
            ).strftime("%Y-%m-%dT%H:%M:%S")
            self.videos[guid] = {
                "library": LIBRARY,
                **video,
                "guid": guid,
                "dateUploaded": uploaded,
            }
        return {"token": DEFAULT_TOKEN, "library": LIBRARY, "videos": list(self.videos)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, 1.0)
        return {}

    def delete(self, guid: str) -> bool:
        return self.videos.pop(guid, None) is not None

    def shown(self, video: dict[str, Any]) -> dict[str, Any]:
        library = self.libraries[str(video["library"])]
        body = {
            "guid": video["guid"],
            "videoLibraryId": int(video["library"]),
            "title": video.get("title", video["guid"]),
            "dateUploaded": video["dateUploaded"],
            "status": 4,
            "length": video.get("length", 1),
            "width": video.get("width", 1280),
            "height": video.get("height", 720),
            "availableResolutions": video.get("resolutions", DEFAULT_RESOLUTIONS),
            "collectionId": video.get("collection", ""),
            "metaTags": [{"property": k, "value": v} for k, v in video.get("meta", {}).items()],
            "hasMP4Fallback": bool(library.get("mp4_fallback")),
        }
        body.update(video.get("broken", {}))
        return body


def bunny_app(state: BunnyState) -> Starlette:
    """The stand-in's ASGI app: the API routes behind the library key, rate limit and faults, the pull zone
    (`/cdn/{libraryId}/...`), control."""

    def api(endpoint: Endpoint) -> Handler:
        return guarded(state, _guard, endpoint)

    def _guard(request: Request, at: float) -> Response | None:
        library = state.libraries.get(request.path_params["library_id"])
        if library is None or request.headers.get("accesskey") != library["key"]:  # REF_AUTH
            return json_response({"Message": "Unauthorized"}, 401)
        allowed, _, reset = state.window.take(request.path_params["library_id"], at)
        if not allowed:
            wait = str(max(1, math.ceil(reset - at)))
            return json_response({"Message": "Too many requests"}, 429, {"Retry-After": wait})
        fault = state.faults.next()
        if fault is not None:
            return json_response({"Message": "Service unavailable"}, fault)
        return None

    async def videos(request: Request, at: float) -> Response:
        library = request.path_params["library_id"]
        try:
            page = int(request.query_params.get("page", "1"))
            per_page = int(request.query_params.get("itemsPerPage", str(DEFAULT_PER_PAGE)))
        except ValueError:
            return json_response({"Message": "page and itemsPerPage must be numbers"}, 400)
        if page < 1 or not 1 <= per_page <= MAX_PER_PAGE:  # REF_LIST
            return json_response({"Message": f"itemsPerPage must be 1 to {MAX_PER_PAGE}"}, 400)
        mine = [v for v in state.videos.values() if str(v["library"]) == library]
        mine.sort(key=lambda v: (v["dateUploaded"], v["guid"]))  # README: oldest first by date
        chosen = mine[(page - 1) * per_page : page * per_page]
        return json_response(
            {
                "totalItems": len(mine),
                "currentPage": page,
                "itemsPerPage": per_page,
                "items": [state.shown(v) for v in chosen],
            }
        )

    async def one_video(request: Request, at: float) -> Response:
        video = state.videos.get(request.path_params["video_id"])
        if video is None or str(video["library"]) != request.path_params["library_id"]:
            return json_response({"Message": "Video not found"}, 404)
        return json_response(state.shown(video))

    async def pull_zone(request: Request) -> Response:
        library_id, guid, name = (request.path_params[k] for k in ("library_id", "video_id", "name"))
        with state.lock:
            library = state.libraries.get(library_id, {})
            video = state.videos.get(guid)
            resolutions = str(video.get("resolutions", DEFAULT_RESOLUTIONS)).split(",") if video else []
            if library.get("token_auth"):  # REF_FILES: a pull zone with token authentication
                status = 403
            elif video is None or str(video["library"]) != library_id:
                status = 404
            elif name == "original":  # REF_FILES
                status = 200 if library.get("keep_original_files") else 404
            elif name.startswith("play_") and name.endswith(".mp4"):
                wanted = name.removeprefix("play_").removesuffix(".mp4")
                status = 200 if library.get("mp4_fallback") and wanted in resolutions else 404
            else:
                status = 404
            state.log.append(Logged(now(), request.method, request.url.path, status))
        if status != 200:
            return Response(b"not found", status_code=status)
        content = file_bytes(video or {}, f"{guid}/{name}")
        if request.method == "HEAD":
            return Response(headers={"Content-Length": str(len(content))}, media_type="video/mp4")
        return Response(content, media_type="video/mp4")

    routes = [
        Route("/library/{library_id}/videos", api(videos)),
        Route("/library/{library_id}/videos/{video_id}", api(one_video)),
        Route("/cdn/{library_id}/{video_id}/{name}", pull_zone, methods=["GET", "HEAD"]),
    ]
    return standin_app(state, routes)

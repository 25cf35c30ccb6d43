"""The Vimeo stand-in: the parts of api.vimeo.com a library's export reads, from Vimeo's public reference.

Sources, each cited where its rule is enforced:
- REF_FORMATS https://developer.vimeo.com/api/common-formats : collections (`data`, `total`, `page`,
  `per_page`, `paging.next/previous/first/last` as URIs), per_page at most 100.
- REF_LIMITS https://developer.vimeo.com/guidelines/rate-limiting : X-RateLimit-Limit / -Remaining / -Reset
  on every answer, 429 when none remain.
- REF_AUTH https://developer.vimeo.com/api/authentication : bearer tokens, scopes (`public`, `private`,
  `video_files`), GET /oauth/verify shows the token's scope.
- REF_FILES https://help.vimeo.com/hc/en-us/articles/12427806914577 : the `download` field (links valid 24 h,
  each with its `expires`; 302 redirects to the CDN)
  needs the `video_files` scope and a Standard plan or higher.
- REF_VIDEOS https://developer.vimeo.com/api/reference/videos : GET /me/videos, GET /videos/{id}, the video's
  `uri`, `name`, `description`, `link`, `created_time`, `privacy.view`, `tags`, `parent_folder`;
  GET /videos/{id}/chapters (`title`, `timecode` in seconds).
- REF_FOLDERS https://developer.vimeo.com/api/reference/folders : GET /me/projects,
  GET /me/projects/{id}/videos.
- REF_TRACKS https://developer.vimeo.com/api/reference/videos#get_text_tracks : GET
  /videos/{id}/texttracks, a collection of text tracks (`uri`, `active`, `type`, `language`, `name`,
  `link`: the WebVTT file, `link_expires_time`).
What the references leave open is written in emulator/platforms/README.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from videoferry.emulator.platforms.common import (
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

DEFAULT_TOKEN = "vimeo-standin-token"
ALL_SCOPES = ("public", "private", "video_files")
#: REF_FILES: download links need a Standard plan or higher; these plans have none.
PLANS_WITHOUT_DOWNLOADS = frozenset({"basic", "free", "plus", "starter"})
#: REF_FILES: "valid for 24 hours".
LINK_LIFETIME = 24 * 3600.0
MAX_PER_PAGE = 100  # REF_FORMATS
DEFAULT_PER_PAGE = 25
DEFAULT_RENDITIONS = (
    {"quality": "source", "rendition": "source", "width": 1920, "height": 1080, "type": "source"},
    {"quality": "hd", "rendition": "720p", "width": 1280, "height": 720, "type": "video/mp4"},
    {"quality": "sd", "rendition": "360p", "width": 640, "height": 360, "type": "video/mp4"},
)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _error(status: int, message: str, code: int, headers: dict[str, str] | None = None) -> Response:
    """Vimeo's error body: `error` for people, `developer_message`, a numeric `error_code`."""
    return json_response(
        {"error": message, "developer_message": message, "error_code": code}, status, headers
    )


class VimeoState(StandinState):
    """The account, its tokens, folders and videos, and the faults and limits the control API sets."""

    def __init__(self) -> None:
        super().__init__(FixedWindow(limit=0, seconds=60.0))
        self.plan = "pro"
        self.tokens: dict[str, set[str]] = {DEFAULT_TOKEN: set(ALL_SCOPES)}
        self.folders: dict[str, str] = {}
        self.videos: dict[str, dict[str, Any]] = {}
        self.links = Links(LINK_LIFETIME)
        #: The account's visible videos in each order a listing asked for (sort, descending, private seen),
        #: kept until the videos change: a page of a large account does not sort it again.
        self.orders: dict[tuple[str, bool, bool], list[dict[str, Any]]] = {}

    # -- control -------------------------------------------------------------------------------------------

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("reset"):  # a fresh account: the same objects, emptied (routes hold them)
            self.plan, self.folders, self.videos = "pro", {}, {}
            self.tokens.clear()
            self.tokens[DEFAULT_TOKEN] = set(ALL_SCOPES)
            self.restart(FixedWindow(0, 60.0))
            self.links = Links(LINK_LIFETIME)
        self.orders.clear()
        self.plan = body.get("plan", self.plan)
        for token, scopes in body.get("tokens", {}).items():
            self.tokens[token] = set(scopes)
        for folder in body.get("folders", []):
            self.folders[str(folder["id"])] = folder["name"]
        for number, video in enumerate(body.get("videos", []), start=len(self.videos) + 1):
            video_id = str(video.get("id", 100000 + number))
            created = video.get("created_time") or _iso(1_700_000_000 + number * 60)
            self.videos[video_id] = {**video, "id": video_id, "created_time": created}
        return {"token": DEFAULT_TOKEN, "videos": list(self.videos), "folders": list(self.folders)}

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        self.configure_limits(body, 60.0)
        if "link_lifetime" in body:
            self.links.lifetime = float(body["link_lifetime"])
        if body.get("expire_links"):
            self.links.expire_all()
        self.plan = body.get("plan", self.plan)
        return {"plan": self.plan}

    def delete(self, video_id: str) -> bool:
        self.orders.clear()
        return self.videos.pop(video_id, None) is not None

    # -- representations -----------------------------------------------------------------------------------

    def visible(self, scopes: set[str]) -> list[dict[str, Any]]:
        """The account's videos the token may see (REF_AUTH: without `private`, only public ones), oldest
        first by default ordering of the stand-in (sort and direction applied by the route)."""
        return [v for v in self.videos.values() if self.may_see(v, scopes)]

    @staticmethod
    def may_see(record: dict[str, Any], scopes: set[str]) -> bool:
        """Whether a token of these scopes sees the video (REF_AUTH: without `private`, public ones only)."""
        return "private" in scopes or record.get("privacy", "anybody") == "anybody"

    def video(self, record: dict[str, Any], scopes: set[str], at: float) -> dict[str, Any]:
        video_id = record["id"]
        folder = record.get("folder")
        shown: dict[str, Any] = {
            "uri": f"/videos/{video_id}",
            "name": record.get("name", f"Video {video_id}"),
            "description": record.get("description"),
            "link": f"https://vimeo.com/{video_id}",
            "created_time": record["created_time"],
            "duration": record.get("duration", 1),
            "privacy": {"view": record.get("privacy", "anybody")},
            "tags": [{"name": t, "tag": t.lower().replace(" ", "")} for t in record.get("tags", [])],
            "parent_folder": (
                {"uri": f"/users/1/projects/{folder}", "name": self.folders.get(str(folder), "")}
                if folder
                else None
            ),
            "status": "available",
        }
        if "video_files" in scopes and self.plan not in PLANS_WITHOUT_DOWNLOADS:  # REF_FILES
            shown["download"] = [self._download(video_id, r, at) for r in self.renditions(record)]
        shown.update(record.get("broken", {}))  # a malformed representation the control API asked for
        return shown

    def renditions(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        return list(record.get("renditions") or DEFAULT_RENDITIONS)

    def _download(self, video_id: str, rendition: dict[str, Any], at: float) -> dict[str, Any]:
        path, expires = self.links.sign(f"/_download/{video_id}/{rendition['rendition']}", at)
        size = len(file_bytes(rendition, f"{video_id}/{rendition['rendition']}"))
        return {
            "quality": rendition["quality"],
            "rendition": rendition["rendition"],
            "type": rendition.get("type", "video/mp4"),
            "width": rendition.get("width"),
            "height": rendition.get("height"),
            "size": size,
            "link": self.base_url + path,
            "expires": _iso(expires),
        }


def _collection(
    request: Request,
    items: list[dict[str, Any]],
    path: str,
    shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any] | None, Response | None]:
    """One page of a collection (REF_FORMATS), or the 400 a bad page or per_page answers; `shown` makes
    the representation of each item on the page (only those: a page of a large account costs its page)."""
    try:
        page = int(request.query_params.get("page", "1"))
        per_page = int(request.query_params.get("per_page", str(DEFAULT_PER_PAGE)))
    except ValueError:
        return None, _error(400, "page and per_page must be numbers", 2204)
    if page < 1 or not 1 <= per_page <= MAX_PER_PAGE:
        return None, _error(400, f"per_page must be 1 to {MAX_PER_PAGE} and page at least 1", 2204)
    last = max(1, -(-len(items) // per_page))
    keep = {k: v for k, v in request.query_params.items() if k not in ("page", "per_page")}

    def uri(number: int) -> str:
        return f"{path}?{urlencode({**keep, 'page': number, 'per_page': per_page})}"

    body = {
        "total": len(items),
        "page": page,
        "per_page": per_page,
        "paging": {
            "next": uri(page + 1) if page < last else None,
            "previous": uri(page - 1) if page > 1 else None,
            "first": uri(1),
            "last": uri(last),
        },
        "data": [shown(item) if shown else item for item in items[(page - 1) * per_page : page * per_page]],
    }
    return body, None


def _sorted(request: Request, state: VimeoState, scopes: set[str]) -> list[dict[str, Any]]:
    """REF_VIDEOS: the videos the token sees, sort=date|alphabetical, direction=asc|desc (default: date,
    newest first); ties by id. Sorted once per order until the account's videos change."""
    sort = "alphabetical" if request.query_params.get("sort", "date") == "alphabetical" else "date"
    reverse = request.query_params.get("direction", "desc" if sort == "date" else "asc") == "desc"
    key = (sort, reverse, "private" in scopes)
    if key not in state.orders:
        videos = state.visible(scopes)
        if sort == "alphabetical":
            videos.sort(key=lambda v: (v.get("name", ""), int(v["id"])), reverse=reverse)
        else:
            videos.sort(key=lambda v: (v["created_time"], int(v["id"])), reverse=reverse)
        state.orders[key] = videos
    return state.orders[key]


def vimeo_app(state: VimeoState) -> Starlette:
    """The stand-in's ASGI app: the API routes behind auth, rate limit and faults, file links, control."""

    def api(endpoint: Callable[[Request, set[str], float], Awaitable[Response]]) -> Handler:
        """`endpoint` behind the guard, given the token's scopes."""
        return guarded(
            state, _guard, lambda request, at: endpoint(request, state.tokens[_token(request)], at)
        )

    def _token(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""

    def _guard(request: Request, at: float) -> Response | None:
        token = _token(request)
        if token not in state.tokens:  # REF_AUTH
            return _error(401, "You must provide a valid authenticated access token.", 8003)
        allowed, remaining, reset = state.window.take(token, at)  # REF_LIMITS
        headers = {
            "X-RateLimit-Limit": str(state.window.limit or 1_000_000),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": _iso(reset),
        }
        if not allowed:
            return _error(429, "Too many API requests. Wait until the rate limit resets.", 9000, headers)
        fault = state.faults.next()
        if fault is not None:
            return _error(fault, "The service is temporarily unavailable.", 9999, headers)
        request.state.rate_headers = headers
        return None

    def answer(request: Request, body: Any, status: int = 200) -> Response:
        return json_response(body, status, getattr(request.state, "rate_headers", None))

    async def verify(request: Request, scopes: set[str], at: float) -> Response:
        return answer(request, {"token_type": "bearer", "scope": " ".join(sorted(scopes)), "user": _me()})

    def _me() -> dict[str, Any]:
        return {
            "uri": "/users/1",
            "name": "Stand-in account",
            "link": "https://vimeo.com/user1",
            "account": state.plan,
        }

    async def me(request: Request, scopes: set[str], at: float) -> Response:
        return answer(request, _me())

    async def my_videos(request: Request, scopes: set[str], at: float) -> Response:
        videos = _sorted(request, state, scopes)
        return _page(request, videos, "/me/videos", lambda v: state.video(v, scopes, at))

    def _page(
        request: Request,
        items: list[dict[str, Any]],
        path: str,
        shown: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> Response:
        body, refused = _collection(request, items, path, shown)
        return refused or answer(request, body)

    async def projects(request: Request, scopes: set[str], at: float) -> Response:
        folders = [
            {"uri": f"/users/1/projects/{fid}", "name": name, "resource_key": fid}
            for fid, name in sorted(state.folders.items(), key=lambda item: int(item[0]))
        ]
        return _page(request, folders, "/me/projects")

    async def project_videos(request: Request, scopes: set[str], at: float) -> Response:
        folder = request.path_params["project_id"]
        if folder not in state.folders:
            return _error(404, "The requested folder couldn't be found.", 5000)
        inside = [v for v in _sorted(request, state, scopes) if str(v.get("folder")) == folder]
        path = f"/me/projects/{folder}/videos"
        return _page(request, inside, path, lambda v: state.video(v, scopes, at))

    def _found(request: Request, scopes: set[str]) -> dict[str, Any] | None:
        record = state.videos.get(request.path_params["video_id"])
        if record is None or not state.may_see(record, scopes):
            return None
        return record

    async def one_video(request: Request, scopes: set[str], at: float) -> Response:
        record = _found(request, scopes)
        if record is None:
            return _error(404, "The requested video couldn't be found.", 5000)
        return answer(request, state.video(record, scopes, at))

    async def chapters(request: Request, scopes: set[str], at: float) -> Response:
        record = _found(request, scopes)
        if record is None:
            return _error(404, "The requested video couldn't be found.", 5000)
        items = [
            {"uri": f"/videos/{record['id']}/chapters/{i}", "title": c["title"], "timecode": c["timecode"]}
            for i, c in enumerate(record.get("chapters", []), start=1)
        ]
        return _page(request, items, f"/videos/{record['id']}/chapters")

    async def texttracks(request: Request, scopes: set[str], at: float) -> Response:
        """REF_TRACKS: the video's text tracks, each with the link of its WebVTT file."""
        record = _found(request, scopes)
        if record is None:
            return _error(404, "The requested video couldn't be found.", 5000)
        video_id = record["id"]
        items = []
        for i, track in enumerate(record.get("texttracks", []), start=1):
            link, expires = state.links.sign(f"/_texttrack/{video_id}/{i}", at)
            items.append(
                {
                    "uri": f"/videos/{video_id}/texttracks/{i}",
                    "active": True,
                    "type": track.get("type", "captions"),
                    "language": track.get("language", "en"),
                    "name": track.get("name"),
                    "link": state.base_url + link,
                    "link_expires_time": int(expires),
                }
            )
        return _page(request, items, f"/videos/{video_id}/texttracks")

    def texttrack_file(request: Request) -> Response | None:
        """REF_TRACKS: a text track's WebVTT file behind its signed link."""
        video_id, number = request.path_params["video_id"], request.path_params["number"]
        tracks = state.videos.get(video_id, {}).get("texttracks", [])
        index = int(number) - 1 if number.isdigit() else -1
        if not 0 <= index < len(tracks):
            return None
        return Response(str(tracks[index].get("text", "WEBVTT\n")).encode(), media_type="text/vtt")

    def download(request: Request) -> Response | None:
        """REF_FILES: a download link is a 302 to the file on the CDN while it has not expired."""
        video_id, rendition = request.path_params["video_id"], request.path_params["rendition"]
        if video_id not in state.videos:
            return None
        return RedirectResponse(f"/_cdn/{video_id}/{rendition}", status_code=302)

    async def cdn(request: Request) -> Response:
        video_id, name = request.path_params["video_id"], request.path_params["rendition"]
        with state.lock:
            record = state.videos.get(video_id)
            chosen = [r for r in state.renditions(record) if r["rendition"] == name] if record else []
        if not chosen:
            return Response(b"not found", status_code=404)
        return Response(file_bytes(chosen[0], f"{video_id}/{name}"), media_type="video/mp4")

    routes = [
        Route("/oauth/verify", api(verify)),
        Route("/me", api(me)),
        Route("/me/videos", api(my_videos)),
        Route("/me/projects", api(projects)),
        Route("/me/projects/{project_id}/videos", api(project_videos)),
        Route("/videos/{video_id}", api(one_video)),
        Route("/videos/{video_id}/chapters", api(chapters)),
        Route("/videos/{video_id}/texttracks", api(texttracks)),
        Route(
            "/_texttrack/{video_id}/{number}",
            signed_file(
                state,
                lambda r: f"/_texttrack/{r.path_params['video_id']}/{r.path_params['number']}",
                texttrack_file,
            ),
        ),
        Route(
            "/_download/{video_id}/{rendition}",
            signed_file(
                state,
                lambda r: f"/_download/{r.path_params['video_id']}/{r.path_params['rendition']}",
                download,
            ),
        ),
        Route("/_cdn/{video_id}/{rendition}", cdn),
    ]
    return standin_app(state, routes)

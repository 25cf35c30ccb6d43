"""Start a platform stand-in (Vimeo, Wistia, Mux, Cloudflare Stream, api.video, Bunny Stream) as a loopback
server, talk to its control API, or serve until interrupted (`videoferry standin PLATFORM`; its first stdout
line is JSON: platform, base_url, token, and the other settings its client reads)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette

from videoferry.emulator.platforms import apivideo, bunny, cloudflare, mux, vimeo, wistia
from videoferry.emulator.platforms.common import CONTROL, StandinServer, first_line

PLATFORMS = ("vimeo", "wistia", "mux", "cloudflare", "apivideo", "bunny")
State = (
    vimeo.VimeoState
    | wistia.WistiaState
    | mux.MuxState
    | cloudflare.CloudflareState
    | apivideo.ApiVideoState
    | bunny.BunnyState
)
#: Each platform's stand-in: (state, app, default token).
_STANDINS: dict[str, tuple[Callable[[], Any], Callable[[Any], Starlette], str]] = {
    "vimeo": (vimeo.VimeoState, vimeo.vimeo_app, vimeo.DEFAULT_TOKEN),
    "wistia": (wistia.WistiaState, wistia.wistia_app, wistia.DEFAULT_TOKEN),
    "mux": (mux.MuxState, mux.mux_app, mux.DEFAULT_TOKEN),
    "cloudflare": (cloudflare.CloudflareState, cloudflare.cloudflare_app, cloudflare.DEFAULT_TOKEN),
    "apivideo": (apivideo.ApiVideoState, apivideo.apivideo_app, apivideo.DEFAULT_TOKEN),
    "bunny": (bunny.BunnyState, bunny.bunny_app, bunny.DEFAULT_TOKEN),
}


def standin_env(platform: str, base_url: str) -> dict[str, str]:
    """The settings beyond token and API address that point a client at the stand-in (account id, the
    library's pull zone, Mux's stream host)."""
    if platform == "cloudflare":
        return {"VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID": cloudflare.ACCOUNT}
    if platform == "bunny":
        return {"VIDEOFERRY_BUNNY_CDN_URL": f"{base_url}/cdn/{bunny.LIBRARY}"}
    if platform == "mux":
        return {"VIDEOFERRY_MUX_STREAM_URL": f"{base_url}/stream"}
    return {}


@dataclass
class Standin:
    """A running stand-in: its server (base_url), its default token and its state."""

    platform: str
    server: StandinServer
    token: str
    state: State
    #: The other variables its client reads (beyond VIDEOFERRY_<PLATFORM>_TOKEN and _API_URL).
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def stop(self) -> None:
        self.server.stop()


def start_standin(platform: str, host: str = "127.0.0.1", port: int = 0) -> Standin:
    """Start the stand-in of `platform` (ValueError naming the known ones); OSError when the port is taken."""
    if platform in _STANDINS:
        make_state, make_app, token = _STANDINS[platform]
        state = make_state()
        server = StandinServer(make_app(state), host, port, name=f"{platform}-standin")
        server.start()
        state.base_url = server.base_url
        return Standin(platform, server, token, state, standin_env(platform, server.base_url))
    raise ValueError(f"unknown platform {platform!r} (expected one of: {', '.join(PLATFORMS)})")


class StandinControl:
    """Client of a stand-in's control API (/_standin/): seed, configure, delete a video, read the log."""

    def __init__(self, base_url: str) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/") + CONTROL, timeout=10.0)

    def seed(self, **body: Any) -> dict[str, Any]:
        """Seed tokens, folders / projects and videos / medias (`reset=True` empties the account first)."""
        return self._call("POST", "/seed", body)

    def configure(self, **body: Any) -> dict[str, Any]:
        """Rate limit (`rate_limit`, `rate_window`), a 5xx burst (`fault_count`, `fault_status`),
        `link_lifetime`, `expire_links`, Vimeo's `plan`."""
        return self._call("POST", "/config", body)

    def delete(self, video_id: str) -> None:
        """Delete a video (as its owner would between the listing and the create)."""
        self._http.delete(f"/videos/{video_id}").raise_for_status()

    def log(self) -> list[dict[str, Any]]:
        """Every request the stand-in answered: at (epoch seconds), method, path, status."""
        answer = self._http.get("/log")
        answer.raise_for_status()
        entries: list[dict[str, Any]] = answer.json()
        return entries

    def _call(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self._http.request(method, path, json=body)
        answer.raise_for_status()
        result: dict[str, Any] = answer.json()
        return result

    def close(self) -> None:
        self._http.close()


def serve_forever(platform: str, host: str = "127.0.0.1", port: int = 0) -> None:
    """Serve until interrupted; the first stdout line is JSON with the platform, base_url and token."""
    standin = start_standin(platform, host, port)
    print(first_line(standin.server, standin.token, platform, standin.env), flush=True)
    print(
        f"{platform} stand-in: {standin.base_url}; control API {CONTROL}/; Ctrl+C stops",
        file=sys.stderr,
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        standin.stop()

"""Helpers for the emulator tests: raw HTTP clients on a roomy workspace, polling, a loopback receiver."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from videoferry.emulator.control import EmulatorControl, Workspace


def roomy_workspace(emu_control: EmulatorControl) -> Workspace:
    """A fresh workspace whose rate limit never gets in the way of a test."""
    return emu_control.create_workspace(rate_per_second=100_000, rate_per_minute=1_000_000)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    """A fresh workspace whose rate limit never gets in the way of a test."""
    return roomy_workspace(emu_control)


@pytest.fixture()
def api(ws: Workspace) -> Iterator[httpx.Client]:
    """Raw HTTP client of the API host with the workspace's token."""
    with httpx.Client(base_url=ws.base_url, headers=ws.headers, timeout=30) as client:
        yield client


@pytest.fixture()
def up(ws: Workspace) -> Iterator[httpx.Client]:
    """Raw HTTP client of the upload host with the workspace's token."""
    with httpx.Client(base_url=ws.upload_url, headers=ws.headers, timeout=30) as client:
        yield client


def wait_for(check: Callable[[], Any], timeout: float = 20.0, interval: float = 0.02) -> Any:
    """Poll until check() returns something truthy; fail after the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the deadline")
        time.sleep(interval)


def wait_status(
    api: httpx.Client,
    video_id: str,
    statuses: tuple[str, ...] = ("done", "error", "aborted"),
    timeout: float = 20.0,
) -> dict[str, Any]:
    """Poll GET /v1/videos/:id until its status is one of statuses; returns the video."""

    def check() -> dict[str, Any] | None:
        video = api.get(f"/v1/videos/{video_id}").json()["data"]
        return video if video["status"] in statuses else None

    return dict(wait_for(check, timeout))


def upload_single(up: httpx.Client, ws: Workspace, path: Path, title: str = "clip", **headers: str) -> str:
    """POST /v2/video with the raw file; returns the video id."""
    sent = {"X-Parent-ID": ws.project_id, "X-Video-Title": title, "Content-Type": "video/mp4", **headers}
    response = up.post("/v2/video", content=path.read_bytes(), headers=sent)
    assert response.status_code == 200, response.text
    return str(response.json()["data"]["id"])


@pytest.fixture()
def done_video(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> dict[str, Any]:
    """A 2-second 160x120 video in status done."""
    video_id = upload_single(up, ws, clip_factory(2.0), title="base")
    return wait_status(api, video_id)


@dataclass
class Receiver:
    """A loopback HTTP server: records POSTs (webhooks) and serves files for URL import."""

    url: str
    received: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # Content-Type of a served file (default video/mp4)

    def events(self, video_id: str) -> list[dict[str, Any]]:
        """Webhook payloads about one video, in arrival order."""
        return [r["json"] for r in self.received if r["json"].get("data", {}).get("id") == video_id]


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    """A Receiver on 127.0.0.1 with a free port."""
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            state.received.append({"headers": dict(self.headers), "json": json.loads(body or b"{}")})
            self.send_response(204)
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            data = state.files.get(self.path)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", state.types.get(self.path, "video/mp4"))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()

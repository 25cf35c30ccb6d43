"""DRM authorisation (4.3): configuration per workspace and project, the 3.3 decision on a real callback."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from videoferry.emulator.control import EmulatorControl, Workspace


@dataclass
class Callback:
    """A loopback DRM callback: answers `status` (or stays silent past 5 s when slow, or sends its body one
    byte every 1.2 s when dripping: each stage is quick, the whole answer is not), records requests."""

    url: str
    status: int = 200
    slow: bool = False
    drip: bool = False
    seen: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture()
def callback() -> Iterator[Callback]:
    state = Callback(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.seen.append({"headers": dict(self.headers), "json": json.loads(body)})
            if state.slow:
                state.release.wait(8)
            body = b"granted" if state.drip else b""
            self.send_response(state.status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                if state.release.wait(1.2):
                    return

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/authorize"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture()
def video_id(api: httpx.Client, up: httpx.Client, ws: Workspace) -> str:
    """A video record (the decision does not need it processed)."""
    answer = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 5}
    )
    return str(answer.json()["data"]["id"])


def test_not_configured_is_404(api: httpx.Client, ws: Workspace) -> None:
    for path in ("/v1/drm/auth", f"/v1/drm/auth/{ws.project_id}"):
        answer = api.get(path)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == 400404
    assert api.delete("/v1/drm/auth").status_code == 404


def test_put_get_update_delete(api: httpx.Client) -> None:
    answer = api.put("/v1/drm/auth", json={"url": "http://127.0.0.1:9/x", "strict": True})
    assert answer.status_code == 200
    data = answer.json()["data"]
    assert data["url"] == "http://127.0.0.1:9/x"
    assert (data["username"], data["password"], data["strict"]) == ("", "", True)
    assert data["created_at"] and data["updated_at"] is None
    changed = api.put("/v1/drm/auth", json={"username": "u", "password": "p"}).json()["data"]
    assert (changed["url"], changed["username"], changed["password"], changed["strict"]) == (
        "http://127.0.0.1:9/x",
        "u",
        "p",
        True,
    )
    assert changed["updated_at"] is not None
    assert api.get("/v1/drm/auth").json()["data"] == changed
    assert api.delete("/v1/drm/auth").json() == {"data": {"success": True}}
    assert api.get("/v1/drm/auth").status_code == 404


def test_validation(api: httpx.Client, ws: Workspace) -> None:
    answer = api.put("/v1/drm/auth", json={"strict": True})
    assert answer.status_code == 400
    assert answer.json()["error"]["invalid_params"][0]["name"] == "url"
    answer = api.put("/v1/drm/auth", json={"url": "ftp://x"})
    assert answer.json()["error"]["invalid_params"][0]["name"] == "url"
    assert (
        api.put("/v1/drm/auth", json={"url": "http://a", "strict": "yes"}).json()["error"]["code"] == 400102
    )
    assert api.get(f"/v1/drm/auth/{uuid.uuid4()}").status_code == 404
    assert api.get("/v1/drm/auth/nope").json()["error"]["code"] == 400301


@pytest.mark.parametrize(
    ("strict", "status", "decision"),
    [
        (True, 200, "issued"),
        (True, 403, "denied"),
        (True, 500, "denied"),
        (False, 403, "denied"),
        (False, 200, "not_blocked"),
        (False, 500, "not_blocked"),
    ],
)
def test_decision_table(
    api: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    callback: Callback,
    video_id: str,
    strict: bool,
    status: int,
    decision: str,
) -> None:
    callback.status = status
    api.put("/v1/drm/auth", json={"url": callback.url, "strict": strict})
    answer = emu_control.drm_license(ws, video_id, ip="10.0.0.1", user_agent="player/1")
    assert answer["decision"] == decision
    assert answer["status"] == status
    assert len(callback.seen) == 1  # one attempt, no retries
    sent = callback.seen[0]
    assert set(sent["json"]) == {"id", "ip", "type", "token", "user_agent"}
    assert (sent["json"]["id"], sent["json"]["ip"], sent["json"]["user_agent"]) == (
        video_id,
        "10.0.0.1",
        "player/1",
    )
    assert "Authorization" not in sent["headers"]


def test_basic_auth_when_username_set(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, callback: Callback, video_id: str
) -> None:
    api.put("/v1/drm/auth", json={"url": callback.url, "username": "drm", "password": "s3cret"})
    emu_control.drm_license(ws, video_id)
    expected = "Basic " + base64.b64encode(b"drm:s3cret").decode()
    assert callback.seen[0]["headers"]["Authorization"] == expected


@pytest.mark.parametrize(("strict", "decision"), [(True, "denied"), (False, "not_blocked")])
def test_unreachable_and_timeout(
    api: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    callback: Callback,
    video_id: str,
    strict: bool,
    decision: str,
) -> None:
    with socket_closed_port() as port:
        api.put("/v1/drm/auth", json={"url": f"http://127.0.0.1:{port}/x", "strict": strict})
        answer = emu_control.drm_license(ws, video_id)
    assert (answer["decision"], answer["status"]) == (decision, None)
    callback.slow = True
    api.put("/v1/drm/auth", json={"url": callback.url})
    answer = emu_control.drm_license(ws, video_id)
    assert (answer["decision"], answer["status"]) == (decision, None)
    assert "5 seconds" in answer["reason"]


def test_the_5_seconds_bound_the_whole_answer(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, callback: Callback, video_id: str
) -> None:
    callback.drip = True  # headers at once, then a byte every 1.2 s: no stage waits 5 s, the answer takes 8
    api.put("/v1/drm/auth", json={"url": callback.url, "strict": True})
    answer = emu_control.drm_license(ws, video_id)
    assert (answer["decision"], answer["status"]) == ("denied", None)
    assert "5 seconds" in answer["reason"]


class socket_closed_port:  # noqa: N801 - used as a context manager
    """A loopback port nobody listens on (bound then closed)."""

    def __enter__(self) -> int:
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
        sock.close()
        return port

    def __exit__(self, *exc: object) -> None:
        pass


def test_project_configuration_comes_first(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, callback: Callback, video_id: str
) -> None:
    api.put("/v1/drm/auth", json={"url": "http://127.0.0.1:9/workspace", "strict": True})
    answer = api.put(f"/v1/drm/auth/{ws.project_id}", json={"url": callback.url, "strict": True})
    assert answer.status_code == 200
    assert api.get(f"/v1/drm/auth/{ws.project_id}").json()["data"]["url"] == callback.url
    assert emu_control.drm_license(ws, video_id)["decision"] == "issued"
    assert len(callback.seen) == 1
    other_project, _ = emu_control.create_project(ws)
    assert emu_control.drm_license(ws, video_id, project_id=other_project)["decision"] == "denied"
    api.delete(f"/v1/drm/auth/{ws.project_id}")
    assert emu_control.drm_license(ws, video_id)["decision"] == "denied"
    assert len(callback.seen) == 1


def test_license_without_configuration_or_video(
    ws: Workspace, emu_control: EmulatorControl, video_id: str
) -> None:
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.drm_license(ws, video_id)
    assert caught.value.response.status_code == 404
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.drm_license(ws, str(uuid.uuid4()))
    assert caught.value.response.status_code == 404


def test_owner_only_delete_and_project_scoped_tokens(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    other_project, _ = emu_control.create_project(ws)
    api.put("/v1/drm/auth", json={"url": "http://127.0.0.1:9/x"})
    member = emu_control.create_token(ws, owner=False)
    answer = httpx.delete(f"{ws.base_url}/v1/drm/auth", headers={"Authorization": member})
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == 100107
    assert httpx.get(f"{ws.base_url}/v1/drm/auth", headers={"Authorization": member}).status_code == 200
    limited = emu_control.create_token(ws, project_ids=[ws.project_id])
    headers = {"Authorization": f"Bearer {limited}"}
    answer = httpx.put(
        f"{ws.base_url}/v1/drm/auth/{other_project}", json={"url": "http://a"}, headers=headers
    )
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == 100103
    answer = httpx.put(
        f"{ws.base_url}/v1/drm/auth/{ws.project_id}", json={"url": "http://a"}, headers=headers
    )
    assert answer.status_code == 200
    assert api.get(f"/v1/drm/auth/{other_project}").status_code == 404


def test_secrets_stay_out_of_the_request_log(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    api.put(
        "/v1/drm/auth", json={"url": "http://127.0.0.1:9/x", "username": "u", "password": "pw-XYZ-secret"}
    )
    log = json.dumps(emu_control.requests(ws.workspace_id))
    assert "pw-XYZ-secret" not in log and ws.token not in log

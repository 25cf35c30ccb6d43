"""Drm against the emulator: the callback per workspace and project (4.3), its decisions (3.3), refusals."""

from __future__ import annotations

import base64
import json
import logging
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.drm import Drm
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.ids import to_base58
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)
PASSWORD = "drm-pass-Kx73-never-seen"


@dataclass
class Callback:
    """A loopback DRM callback answering `status`; records each request's Authorization and body."""

    url: str = ""
    status: int = 200
    seen: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture()
def callback() -> Iterator[Callback]:
    state = Callback()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.seen.append({"authorization": self.headers.get("Authorization"), "json": json.loads(body)})
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/authorize"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


def make_transport(ws: Workspace, token: str | None = None) -> Transport:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    return Transport(ws.base_url, ws.upload_url, token or ws.token, limiter=limiter, retry=FAST)


@pytest.fixture()
def drm(ws: Workspace) -> Iterator[Drm]:
    transport = make_transport(ws)
    yield Drm(transport)
    transport.close()


def upload_video(ws: Workspace, clip: Path, parent_id: str) -> str:
    headers = {**ws.headers, "X-Parent-ID": parent_id, "X-Video-Title": "drm", "Content-Type": "video/mp4"}
    answer = httpx.post(f"{ws.upload_url}/v2/video", content=clip.read_bytes(), headers=headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["id"])


def test_workspace_configuration_lifecycle(drm: Drm, callback: Callback) -> None:
    with pytest.raises(E.NotFoundError) as missing:
        drm.get()
    assert missing.value.code == 400404
    assert drm.find() is None
    with pytest.raises(E.ValidationError) as no_url:
        drm.update(strict=True)  # nothing configured yet: url is needed
    assert [p["name"] for p in no_url.value.invalid_params] == ["url"]
    with pytest.raises(E.ValidationError):
        drm.update(url="ftp://127.0.0.1/x")
    with pytest.raises(ValueError):
        drm.update()
    made = drm.update(url=callback.url, username="license", password=PASSWORD, strict=True)
    assert made.url == callback.url and made.username == "license" and made.password == PASSWORD
    assert made.strict is True and made.created_at is not None and made.updated_at is None
    assert PASSWORD not in repr(made) and PASSWORD not in str(made)
    relaxed = drm.update(strict=False)  # only the passed field changes
    assert relaxed.strict is False and relaxed.password == PASSWORD and relaxed.updated_at is not None
    assert drm.get() == relaxed
    drm.delete()
    assert drm.find() is None
    with pytest.raises(E.NotFoundError):
        drm.delete()


def test_decisions_follow_strict_and_basic_auth(
    drm: Drm, ws: Workspace, emu_control: EmulatorControl, callback: Callback, sample_clip: Path
) -> None:
    video_id = upload_video(ws, sample_clip, ws.project_id)
    drm.update(url=callback.url, username="license", password=PASSWORD, strict=True)
    for status, decision in ((200, "issued"), (403, "denied"), (500, "denied")):
        callback.status = status
        assert emu_control.drm_license(ws, video_id)["decision"] == decision
    expected = "Basic " + base64.b64encode(f"license:{PASSWORD}".encode()).decode()
    assert callback.seen[0]["authorization"] == expected
    assert callback.seen[0]["json"]["id"] == video_id
    drm.update(strict=False, username="")
    for status, decision in ((403, "denied"), (500, "not_blocked"), (200, "not_blocked")):
        callback.status = status
        assert emu_control.drm_license(ws, video_id)["decision"] == decision
    assert callback.seen[-1]["authorization"] is None  # no username: no credentials


def test_per_project_configuration_and_scopes(
    drm: Drm, ws: Workspace, emu_control: EmulatorControl, callback: Callback, sample_clip: Path
) -> None:
    other_project, _folder = emu_control.create_project(ws)
    drm.update(url=callback.url, strict=False)
    project = drm.update(to_base58(other_project), url=callback.url + "?project", strict=True)
    assert project.strict is True and drm.get(other_project).url == callback.url + "?project"
    assert drm.get().strict is False  # the workspace's own configuration is separate
    with pytest.raises(E.NotFoundError):
        drm.get("00000000-0000-4000-8000-000000000000")  # no such project
    with pytest.raises(E.InvalidIdentifierError):
        drm.get("nope")
    video_id = upload_video(ws, sample_clip, other_project)
    callback.status = 500
    assert emu_control.drm_license(ws, video_id)["decision"] == "denied"  # the project's strict one
    scoped_token = emu_control.create_token(ws, project_ids=[ws.project_id])
    helper_token = emu_control.create_token(ws, owner=False)
    scoped, helper = make_transport(ws, scoped_token), make_transport(ws, helper_token)
    try:
        with pytest.raises(E.AccessDeniedError) as denied:
            Drm(scoped).get(other_project)
        assert denied.value.code == 100103
        with pytest.raises(E.NotOwnerError) as not_owner:
            Drm(helper).delete(other_project)
        assert not_owner.value.code == 100107 and not_owner.value.status == 403
    finally:
        scoped.close()
        helper.close()
    drm.delete(other_project)
    assert drm.find(other_project) is None and drm.find() is not None


def test_password_stays_out_of_logs_reprs_and_errors(
    drm: Drm, ws: Workspace, callback: Callback, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    made = drm.update(url=callback.url, username="license", password=PASSWORD)
    texts = [repr(made), str(made), repr(drm.get()), str(drm.find())]
    with pytest.raises(E.ValidationError) as refused:
        drm.update(url="gopher://x", password=PASSWORD + "2")
    exc = refused.value
    texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc)), str(exc.invalid_params)]
    ours = [r for r in caplog.records if not r.name.startswith(("videoferry.emulator", "uvicorn"))]
    texts += [f"{r.name} {r.getMessage()}" for r in ours]
    assert ours  # the client's and httpx's DEBUG records were captured
    blob = "\n".join(texts)
    assert PASSWORD not in blob and ws.token not in blob

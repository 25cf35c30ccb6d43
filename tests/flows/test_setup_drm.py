"""setup drm-check: the DRM callback checked by the decision table of spec 3.3, simulated and called."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows.helpers import cli_env, settings_for
from tests.flows.test_setup_secrets import videoferry
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import Workspace
from videoferry.tasks.setup.drm import check_drm, decide


class Callback:
    """A loopback DRM callback answering `status`; records the Authorization headers it saw."""

    def __init__(self) -> None:
        self.status = 200
        self.auth: list[str | None] = []
        self.url = ""


@pytest.fixture()
def callback() -> Iterator[Callback]:
    state = Callback()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.auth.append(self.headers.get("Authorization"))
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/authorize"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def video_id(emu: Workspace) -> str:
    """A video record of the workspace (the license decision does not need it processed)."""
    answer = httpx.post(
        f"{emu.upload_url}/v2/init",
        headers={"Authorization": f"Bearer {emu.token}"},
        json={"type": "video", "parent_id": emu.project_id, "title": "t", "filesize": 5},
    )
    return str(answer.json()["data"]["id"])


@pytest.mark.parametrize(
    ("strict", "status", "decision"),
    [(True, 200, "issued"), (True, 500, "denied"), (False, 403, "denied"), (False, 500, "not_blocked")],
)
def test_decision_simulated_and_called(
    emu: Workspace, callback: Callback, strict: bool, status: int, decision: str
) -> None:
    callback.status = status
    with VideoClient.from_settings(settings_for(emu)) as client:
        client.drm.update(url=callback.url, username="drm", password="pw-secret", strict=strict)
        simulated = check_drm(client, video_id=video_id(emu))
        called = check_drm(client)
    assert simulated is not None and called is not None
    assert (simulated.source, simulated.decision, simulated.status) == (
        "service simulation",
        decision,
        status,
    )
    assert (called.source, called.decision, called.status) == ("callback called", decision, status)
    assert len(callback.auth) == 2 and all((a or "").startswith("Basic ") for a in callback.auth)
    assert "pw-secret" not in simulated.line() + called.line()


def test_table_without_an_answer() -> None:
    assert decide(True, None) == "denied" and decide(False, None) == "not_blocked"


def test_command_line(emu: Workspace, callback: Callback, tmp_path: Path) -> None:
    env = cli_env(emu)
    assert videoferry(["setup", "drm-check"], env).returncode == 2  # not configured
    with VideoClient.from_settings(settings_for(emu)) as client:
        client.drm.update(url=callback.url, strict=True)
        client.drm.update(emu.project_id, url=callback.url, strict=False)
    callback.status = 403
    denied = videoferry(["setup", "drm-check"], env)
    assert denied.returncode == 1 and "callback HTTP 403 -> denied" in denied.stdout
    blocked_not = videoferry(["setup", "drm-check", "--project-id", emu.project_id], env)
    assert (
        blocked_not.returncode == 1 and "-> denied" in blocked_not.stdout
    )  # 403 denies even when not strict
    callback.status = 500
    passed = videoferry(
        ["setup", "drm-check", "--project-id", emu.project_id, "--video-id", video_id(emu)], env
    )
    assert passed.returncode == 0 and "-> not_blocked (service simulation)" in passed.stdout

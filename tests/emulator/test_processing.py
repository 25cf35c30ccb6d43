"""Processing (3.1) in immediate, manual and timed mode, the control status override and webhooks (6)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace


def _statuses(receiver: Receiver, video_id: str) -> list[str]:
    return [e["data"]["status"] for e in receiver.events(video_id)]


def test_immediate_mode_walks_every_state_and_posts_webhooks(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_webhook(ws, receiver.url + "/hooks", username="hook-user", password="hook-pass")
    data = clip_factory(1.0).read_bytes()
    session = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": len(data)}
    ).json()["data"]
    headers = {"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}
    httpx.patch(session["endpoint"], content=data[:100], headers={**headers, "Upload-Offset": "0"})
    httpx.patch(session["endpoint"], content=data[100:], headers={**headers, "Upload-Offset": "100"})
    assert wait_status(api, session["id"])["status"] == "done"
    wait_for(lambda: _statuses(receiver, session["id"])[-1:] == ["done"])
    assert _statuses(receiver, session["id"]) == ["uploading", "pre-processing", "processing", "done"]
    first = receiver.received[0]
    expected = "Basic " + base64.b64encode(b"hook-user:hook-pass").decode()
    assert first["headers"]["Authorization"] == expected
    assert first["json"] == {
        "event": "media.update.status",
        "data": {"id": session["id"], "status": "uploading"},
    }


def test_webhook_can_be_cleared(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_webhook(ws, receiver.url)
    first = upload_single(up, ws, clip_factory(0.5))
    wait_for(lambda: _statuses(receiver, first)[-1:] == ["done"])
    assert "Authorization" not in receiver.received[0]["headers"]
    emu_control.set_webhook(ws, None)
    second = upload_single(up, ws, clip_factory(0.5))
    wait_status(api, second)
    emu_control.set_webhook(ws, receiver.url)
    emu_control.set_video_status(ws, second, "aborted")
    wait_for(lambda: _statuses(receiver, second) == ["aborted"])


def test_manual_mode_waits_for_the_control_api(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_processing(ws, "manual")
    video_id = upload_single(up, ws, clip_factory(1.0))
    video = wait_status(api, video_id, ("processing",))
    assert video["progress"] == 100  # progress is no readiness signal
    assert video["duration"] > 0
    assert api.get(f"/v1/videos/{video_id}").json()["data"]["status"] == "processing"
    forced = emu_control.set_video_status(ws, video_id, "done")
    assert forced["status"] == "done"
    assert {a["quality"] for a in api.get(f"/v1/videos/{video_id}").json()["data"]["assets"]} == {
        "original",
        "360p",
    }
    failing = upload_single(up, ws, clip_factory(0.5))
    wait_status(api, failing, ("processing",))
    emu_control.set_video_status(ws, failing, "error", "transcoder crashed")
    assert api.get(f"/v1/videos/{failing}").json()["data"]["status"] == "error"


def test_timed_mode_reaches_done_after_processing(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_processing(ws, "timed", seconds=0.6)
    video_id = upload_single(up, ws, clip_factory(0.5))
    seen = set()

    def done() -> bool:
        video = api.get(f"/v1/videos/{video_id}").json()["data"]
        seen.add(video["status"])
        return bool(video["status"] == "done")

    wait_for(done, interval=0.01)
    assert "processing" in seen


def test_timed_workspace_from_creation(
    emu_control: EmulatorControl, clip_factory: Callable[..., Path]
) -> None:
    ws = emu_control.create_workspace(processing="timed", processing_seconds=30, rate_per_second=100)
    with (
        httpx.Client(base_url=ws.upload_url, headers=ws.headers) as up,
        httpx.Client(base_url=ws.base_url, headers=ws.headers) as api,
    ):
        video_id = upload_single(up, ws, clip_factory(0.5))
        video = wait_status(api, video_id, ("processing",))
        assert video["progress"] < 100
        emu_control.set_video_status(ws, video_id, "done")
        assert api.get(f"/v1/videos/{video_id}").json()["data"]["status"] == "done"


def test_control_status_validation(ws: Workspace, emu_control: EmulatorControl) -> None:
    response = httpx.post(
        f"{ws.base_url}/_emulator/videos/{ws.project_id}/status", json={"status": "done"}, headers=ws.headers
    )
    assert response.status_code == 404
    bad = httpx.post(
        f"{ws.base_url}/_emulator/videos/{ws.project_id}/status", json={"status": "ready"}, headers=ws.headers
    )
    assert bad.json()["error"]["invalid_params"][0]["name"] == "status"
    mode = httpx.put(f"{ws.base_url}/_emulator/processing", json={"mode": "fast"}, headers=ws.headers)
    assert mode.status_code == 400

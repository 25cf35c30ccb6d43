"""The control API: workspaces, projects, request log, videos, limits, webhook, reset; its errors."""

from __future__ import annotations

import time
import uuid

import httpx

from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.server import EmulatorServer


def test_workspace_keys_and_repr(emu: Workspace, emulator_server: EmulatorServer) -> None:
    assert emu.base_url == emulator_server.base_url and emu.upload_url == emulator_server.upload_url
    assert len({emu.workspace_id, emu.project_id, emu.folder_id}) == 3
    assert emu.token not in repr(emu)
    raw = httpx.post(f"{emu.base_url}/_emulator/workspaces").json()
    assert set(raw) == {"base_url", "upload_url", "token", "workspace_id", "project_id", "folder_id"}


def test_new_project_has_a_folder(emu: Workspace, emu_control: EmulatorControl) -> None:
    project_id, folder_id = emu_control.create_project(emu)
    with httpx.Client(base_url=emu.upload_url, headers=emu.headers) as up:
        for parent in (project_id, folder_id):
            body = {"type": "video", "parent_id": parent, "title": "t", "filesize": 1}
            assert up.post("/v2/init", json=body).status_code == 200


def test_control_auth_errors(emu: Workspace) -> None:
    missing = httpx.post(f"{emu.base_url}/_emulator/projects")
    assert (missing.status_code, missing.json()["error"]["code"]) == (400, 100101)
    wrong = httpx.post(f"{emu.base_url}/_emulator/projects", headers={"Authorization": "Bearer nope"})
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, 100102)
    assert httpx.get(f"{emu.base_url}/_emulator/projects").status_code == 405
    assert httpx.get(f"{emu.base_url}/_emulator/nothing").status_code == 404
    bad_body = httpx.post(f"{emu.base_url}/_emulator/workspaces", json={"processing": "slow"})
    assert bad_body.json()["error"]["invalid_params"][0]["name"] == "processing"
    bad_hook = httpx.put(f"{emu.base_url}/_emulator/webhook", json={"url": "ftp://x"}, headers=emu.headers)
    assert bad_hook.status_code == 400
    bad_limits = httpx.put(
        f"{emu.base_url}/_emulator/limits", json={"rate_per_second": -1}, headers=emu.headers
    )
    assert bad_limits.status_code == 400
    not_a_number = httpx.get(f"{emu.base_url}/_emulator/requests", params={"since": "x"})
    assert not_a_number.status_code == 400


def test_request_log(emu: Workspace, emu_control: EmulatorControl) -> None:
    started = time.time()
    httpx.get(f"{emu.base_url}/v1/videos", headers=emu.headers)
    httpx.get(f"{emu.base_url}/v1/videos/{uuid.uuid4()}", headers=emu.headers)
    httpx.post(f"{emu.upload_url}/v2/init", headers=emu.headers, json={})
    emu_control.videos(emu)
    log = emu_control.requests(emu.workspace_id)
    assert [(e["host"], e["method"], e["status"], e["api"]) for e in log] == [
        ("api", "GET", 200, True),
        ("api", "GET", 404, True),
        ("upload", "POST", 400, True),
    ]
    assert all(e["workspace_id"] == emu.workspace_id and e["time"] >= started - 1 for e in log)
    assert log[0]["path"] == "/v1/videos"
    assert emu_control.requests(emu.workspace_id, since=time.time() + 60) == []
    assert len(emu_control.requests()) >= 3


def test_videos_listing_has_file_size(emu: Workspace, emu_control: EmulatorControl) -> None:
    with httpx.Client(base_url=emu.upload_url, headers=emu.headers) as up:
        session = up.post(
            "/v2/init", json={"type": "video", "parent_id": emu.project_id, "title": "t", "filesize": 10}
        ).json()["data"]
    httpx.patch(
        session["endpoint"],
        content=b"12345",
        headers={
            "Tus-Resumable": "1.0.0",
            "Upload-Offset": "0",
            "Content-Type": "application/offset+octet-stream",
        },
    )
    videos = emu_control.videos(emu)
    assert [(v["id"], v["status"], v["file_size"]) for v in videos] == [(session["id"], "uploading", 0)]
    assert videos[0]["progress"] == 50


def test_reset_keeps_the_default_workspace_keys() -> None:
    with EmulatorServer() as server:
        control = EmulatorControl(server.base_url)
        default = dict(server.default)
        other = control.create_workspace()
        token = default["token"]
        headers = {"Authorization": token}
        init = httpx.post(
            f"{server.upload_url}/v2/init",
            headers=headers,
            json={"type": "video", "parent_id": default["project_id"], "title": "t", "filesize": 3},
        ).json()["data"]
        control.reset()
        assert server.default == default
        listed = httpx.get(f"{server.base_url}/v1/videos", headers=headers)
        assert listed.status_code == 200 and listed.json()["data"] == []
        assert httpx.get(f"{server.base_url}/v1/videos", headers=other.headers).status_code == 401
        assert httpx.head(init["endpoint"]).status_code == 404
        assert [(e["method"], e["status"]) for e in control.requests()] == [
            ("GET", 200),
            ("GET", 401),
            ("HEAD", 404),
        ]
        control.close()

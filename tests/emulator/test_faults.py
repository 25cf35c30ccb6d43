"""Fault injection: seeded errors, latency, drops after commit, forced 429, truncation, bandwidth."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.emulator.conftest import roomy_workspace, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace

TUS = {"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}


def _statuses(emu_control: EmulatorControl, seed: int) -> list[int]:
    ws = roomy_workspace(emu_control)
    emu_control.set_faults(
        ws, [{"kind": "error", "rate": 0.5, "status": 503, "path": "^/v1/videos$"}], seed=seed
    )
    return [httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code for _ in range(40)]


def test_same_seed_same_faults(emu_control: EmulatorControl) -> None:
    first = _statuses(emu_control, 7)
    assert first == _statuses(emu_control, 7)
    assert set(first) == {200, 503}
    assert first != _statuses(emu_control, 8)


def test_error_rule_filters_and_times(
    ws: Workspace, api: httpx.Client, emu_control: EmulatorControl, done_video: dict
) -> None:
    emu_control.set_faults(ws, [{"kind": "error", "method": "GET", "path": "/v1/videos/", "times": 2}])
    video_path = f"/v1/videos/{done_video['id']}"
    first = api.get(video_path)
    assert first.status_code == 500
    error = first.json()["error"]
    assert error["code"] == 500500 and error["path"] == video_path and "timestamp" in error
    assert "x-request-id" in first.headers
    assert api.get("/v1/videos").status_code == 200  # path regex does not match
    assert api.patch(video_path, json={"title": "x"}).status_code == 200  # method does not match
    assert api.get(video_path).status_code == 500
    assert api.get(video_path).status_code == 200  # times exhausted
    emu_control.set_faults(ws, [{"kind": "error"}])
    assert api.get("/v1/videos").status_code == 500
    emu_control.clear_faults(ws)
    assert api.get("/v1/videos").status_code == 200


def test_latency(ws: Workspace, api: httpx.Client, emu_control: EmulatorControl) -> None:
    emu_control.set_faults(ws, [{"kind": "latency", "ms": 300}])
    started = time.monotonic()
    assert api.get("/v1/videos").status_code == 200
    assert time.monotonic() - started >= 0.3


def test_a_held_request_is_open_until_answered(
    ws: Workspace, api: httpx.Client, emu_control: EmulatorControl
) -> None:
    emu_control.set_faults(ws, [{"kind": "latency", "ms": 5000, "method": "GET"}])
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = pool.submit(api.get, "/v1/videos")
        deadline = time.monotonic() + 30
        while not (held := emu_control.requests(ws.workspace_id, open_now=True)):
            assert not answer.done() and time.monotonic() < deadline, "the held GET was never open"
            time.sleep(0.02)
        assert [(r["method"], r["path"], r["status"]) for r in held] == [("GET", "/v1/videos", 0)]
        assert answer.result(timeout=30).status_code == 200
    assert emu_control.requests(ws.workspace_id, open_now=True) == []
    assert [r["status"] for r in emu_control.requests(ws.workspace_id) if r["path"] == "/v1/videos"] == [200]


def test_drop_after_commit(
    ws: Workspace,
    api: httpx.Client,
    up: httpx.Client,
    emu_control: EmulatorControl,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_faults(ws, [{"kind": "drop_after_commit", "method": "POST", "path": "^/v2/video$"}])
    with pytest.raises(httpx.RemoteProtocolError):
        up.post(
            "/v2/video",
            content=clip_factory(0.5).read_bytes(),
            headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "dropped"},
        )
    listed = api.get("/v1/videos", params={"title": "dropped"}).json()["data"]
    assert len(listed) == 1
    assert wait_status(api, listed[0]["id"])["status"] == "done"
    entry = [e for e in emu_control.requests(ws.workspace_id) if e["path"] == "/v2/video"][-1]
    assert entry["dropped"] is True and entry["status"] == 200


def test_forced_rate_limit_is_not_counted(emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=0, rate_per_minute=3)
    emu_control.set_faults(ws, [{"kind": "rate_limit", "times": 5}])
    statuses = [httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).status_code for _ in range(9)]
    assert statuses == [429] * 5 + [200] * 3 + [429]
    assert "retry-after" not in httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).headers


def test_truncate_body_keeps_a_share_and_drops(
    ws: Workspace, up: httpx.Client, emu_control: EmulatorControl
) -> None:
    size = 400_000
    session = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": size}
    ).json()["data"]
    emu_control.set_faults(ws, [{"kind": "truncate_body", "method": "PATCH", "fraction": 0.25, "times": 1}])
    with pytest.raises(httpx.HTTPError):
        httpx.patch(session["endpoint"], content=b"\0" * size, headers={**TUS, "Upload-Offset": "0"})
    assert httpx.head(session["endpoint"]).headers["upload-offset"] == str(size // 4)
    rest = httpx.patch(
        session["endpoint"],
        content=b"\0" * (size - size // 4),
        headers={**TUS, "Upload-Offset": str(size // 4)},
    )
    assert rest.status_code == 204 and rest.headers["upload-offset"] == str(size)


def test_bandwidth_cap(ws: Workspace, up: httpx.Client, emu_control: EmulatorControl) -> None:
    size = 300_000
    session = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": size}
    ).json()["data"]
    emu_control.set_faults(ws, [{"kind": "bandwidth", "bytes_per_second": 500_000}])
    started = time.monotonic()
    response = httpx.patch(session["endpoint"], content=b"\0" * size, headers={**TUS, "Upload-Offset": "0"})
    elapsed = time.monotonic() - started
    assert response.status_code == 204
    assert elapsed >= size / 500_000 * 0.8


@pytest.mark.parametrize(
    "rules",
    [
        [{"kind": "explode"}],
        [{"kind": "error", "rate": 2}],
        [{"kind": "error", "path": "("}],
        [{"kind": "error", "times": -1}],
        [{"kind": "truncate_body", "fraction": 1.5}],
        "nope",
        [{"kind": "bandwidth", "bytes_per_second": 0}],
        [{"kind": "error", "status": 200}],
    ],
)
def test_bad_rules_are_400400(ws: Workspace, rules: object) -> None:
    response = httpx.put(
        f"{ws.base_url}/_emulator/faults", json={"seed": 1, "rules": rules}, headers=ws.headers
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400400

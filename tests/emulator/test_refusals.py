"""The refusal variants: a quota of N videos (100106) and a workspace whose billing or e-mail state refuses
every create after N more (400207, 400208, 400209, 400212, 400213), through raw HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.control import EmulatorControl, Workspace
from emulator.variants import REFUSING
from tests.emulator.conftest import upload_single, wait_status


def _init(up: httpx.Client, ws: Workspace, title: str) -> httpx.Response:
    return up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": title, "filesize": 10}
    )


def _videos(control: EmulatorControl, ws: Workspace) -> list[dict[str, Any]]:
    return control.videos(ws)


@pytest.mark.parametrize("status", [400, 403])
def test_a_quota_of_n_videos_refuses_the_next_create_with_100106(
    emu_control: EmulatorControl, ws: Workspace, up: httpx.Client, status: int
) -> None:
    emu_control.set_variants(ws, ["video-quota"], video_quota=2, quota_status=status)
    assert _init(up, ws, "a").status_code == 200 and _init(up, ws, "b").status_code == 200
    refused = _init(up, ws, "c")
    assert refused.status_code == status and refused.json()["error"]["code"] == 100106
    single = up.post("/v2/video", content=b"x", headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "d"})
    assert single.status_code == status and single.json()["error"]["code"] == 100106
    assert sorted(v["title"] for v in _videos(emu_control, ws)) == ["a", "b"]  # nothing made by a refusal
    emu_control.set_variants(ws, ["video-quota"], video_quota=3)  # the quota raised: creates go on
    assert _init(up, ws, "c").status_code == 200


def test_the_quota_counts_copies_too(
    emu_control: EmulatorControl,
    ws: Workspace,
    api: httpx.Client,
    up: httpx.Client,
    clip_factory: Callable[..., Path],
) -> None:
    video = wait_status(api, upload_single(up, ws, clip_factory(1.0)))
    emu_control.set_variants(ws, ["video-quota"], video_quota=1)
    copy = api.post(f"/v1/videos/{video['id']}/copy", json={})
    assert copy.status_code == 400 and copy.json()["error"]["code"] == 100106
    assert len(_videos(emu_control, ws)) == 1


@pytest.mark.parametrize("name", sorted(REFUSING))
def test_a_billing_stop_refuses_every_create_after_refuse_after(
    emu_control: EmulatorControl, ws: Workspace, api: httpx.Client, up: httpx.Client, name: str
) -> None:
    emu_control.set_variants(ws, [name], refuse_after=2)
    assert _init(up, ws, "a").status_code == 200
    event = api.post("/v2/live/events", json={"name": "ev", "type": "recurring", "parent_id": ws.project_id})
    assert event.status_code == 201, event.text  # the second create: still accepted
    for refused in (
        _init(up, ws, "b"),
        api.post("/v2/live/events", json={"name": "ev2", "type": "recurring", "parent_id": ws.project_id}),
        api.post("/v1/privacy-domains", json={"domain": "example.com"}),
        api.post(
            f"/v2/live/events/{event.json()['data']['id']}/restreams",
            json={"name": "r", "url": "rtmp://example.com/live", "key": "k"},
        ),
    ):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == REFUSING[name]
    assert api.get("/v2/live/events").json()["meta"]["pagination"]["total"] == 1
    assert [v["title"] for v in _videos(emu_control, ws)] == ["a"]
    assert api.get(f"/v1/videos/{_videos(emu_control, ws)[0]['id']}").status_code == 200  # reads still pass
    emu_control.set_variants(ws, [])  # paid: creates go on
    assert _init(up, ws, "b").status_code == 200


def test_refusal_parameters_are_checked(emu_control: EmulatorControl, ws: Workspace) -> None:
    for params in ({"quota_status": 429}, {"video_quota": 1.5}, {"processing_concurrency": 0}):
        with pytest.raises(httpx.HTTPStatusError) as caught:
            emu_control.set_variants(ws, ["video-quota"], **params)
        assert caught.value.response.json()["error"]["code"] == 400400
        assert next(iter(params)) in caught.value.response.text
    with pytest.raises(httpx.HTTPStatusError):
        emu_control.set_variants(ws, ["balance-empty", "email-unconfirmed"])  # one billing state at a time


def test_refuse_changes_refuses_updates_moves_and_deletes_after_refuse_after(
    emu_control: EmulatorControl,
    ws: Workspace,
    api: httpx.Client,
    up: httpx.Client,
    clip_factory: Callable[..., Path],
) -> None:
    video = wait_status(api, upload_single(up, ws, clip_factory(1.0)))
    path = f"/v1/videos/{video['id']}"
    emu_control.set_variants(ws, ["balance-empty"])  # the plainest reading: changes pass
    assert api.patch(path, json={"tags": ["a"]}).status_code == 200
    emu_control.set_variants(ws, ["balance-empty", "refuse-changes"], refuse_after=1)
    assert api.patch(path, json={"tags": ["b"]}).status_code == 200  # the one let through
    for refused in (
        api.patch(path, json={"tags": ["c"]}),
        api.post(f"{path}/move", json={"project_id": ws.project_id}),
        api.delete(path),
    ):
        assert refused.status_code == 400 and refused.json()["error"]["code"] == 400207, refused.text
    (kept,) = _videos(emu_control, ws)
    assert kept["tags"] == ["b"]  # nothing changed by a refusal

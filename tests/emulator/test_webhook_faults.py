"""Webhook faults of media.update.status: lost, duplicated, out of order, late, forged; forged on demand."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace

ALL = ["uploading", "pre-processing", "processing", "done"]
BASIC = "Basic " + base64.b64encode(b"hook:secret").decode()
fault = EmulatorControl.webhook_fault


def _statuses(receiver: Receiver, video_id: str) -> list[str]:
    return [e["data"]["status"] for e in receiver.events(video_id)]


def _hooked(emu_control: EmulatorControl, ws: Workspace, receiver: Receiver) -> None:
    emu_control.set_webhook(ws, receiver.url + "/hook", username="hook", password="secret")


def _upload(up: httpx.Client, ws: Workspace, clip: Path) -> str:
    return upload_single(up, ws, clip, title="hooked")


def test_lost_and_duplicated(
    up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, receiver: Receiver, sample_clip: Path
) -> None:
    _hooked(emu_control, ws, receiver)
    rules = [
        fault("webhook_lost", video_status="processing"),
        fault("webhook_duplicate", video_status="done"),
    ]
    emu_control.set_faults(ws, rules)
    video_id = _upload(up, ws, sample_clip)
    wait_for(lambda: _statuses(receiver, video_id).count("done") == 2)
    assert _statuses(receiver, video_id) == ["uploading", "pre-processing", "done", "done"]
    assert all(r["headers"]["Authorization"] == BASIC for r in receiver.received)  # real ones: configured


def test_out_of_order(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    sample_clip: Path,
) -> None:
    _hooked(emu_control, ws, receiver)
    emu_control.set_faults(ws, [fault("webhook_out_of_order", video_status="processing", ms=60_000)])
    video_id = _upload(up, ws, sample_clip)
    wait_for(lambda: len(_statuses(receiver, video_id)) == 4)
    assert _statuses(receiver, video_id) == ["uploading", "pre-processing", "done", "processing"]
    assert wait_status(api, video_id)["status"] == "done"
    # held with no later status to follow: it goes out anyway once its hold ends
    emu_control.set_faults(ws, [fault("webhook_out_of_order", video_status="done", ms=200)])
    second = _upload(up, ws, sample_clip)
    wait_for(lambda: _statuses(receiver, second) == ALL)


def test_late(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    sample_clip: Path,
) -> None:
    _hooked(emu_control, ws, receiver)
    emu_control.set_processing(ws, "manual")
    emu_control.set_faults(ws, [fault("webhook_late", video_status="uploading", ms=4000)])
    video_id = _upload(up, ws, sample_clip)
    wait_for(lambda: "processing" in _statuses(receiver, video_id))
    assert "uploading" not in _statuses(receiver, video_id)  # later ones passed it
    wait_for(lambda: "uploading" in _statuses(receiver, video_id))
    assert _statuses(receiver, video_id) == ["pre-processing", "processing", "uploading"]


def test_forged_by_a_rule(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    sample_clip: Path,
) -> None:
    _hooked(emu_control, ws, receiver)
    emu_control.set_processing(ws, "manual")
    rules = [
        fault(
            "webhook_forged", video_status="processing", claim="done-processing", auth="configured", times=1
        ),
        fault("webhook_forged", video_status="processing", claim="done-unknown", auth="none", times=1),
    ]
    emu_control.set_faults(ws, rules)
    video_id = _upload(up, ws, sample_clip)
    wait_for(lambda: len(receiver.received) == 5)
    assert _statuses(receiver, video_id) == ["uploading", "pre-processing", "processing", "done"]
    forged_done = receiver.received[3]
    assert forged_done["json"]["data"] == {"id": video_id, "status": "done"}
    assert forged_done["headers"]["Authorization"] == BASIC  # a perfect forgery: only the service can tell
    assert wait_status(api, video_id, ("processing",))["status"] == "processing"  # the claim is false
    unknown = receiver.received[4]
    assert unknown["json"]["data"]["status"] == "done" and "Authorization" not in unknown["headers"]
    assert api.get(f"/v1/videos/{unknown['json']['data']['id']}").status_code == 404
    emu_control.set_video_status(ws, video_id, "done")
    emu_control.set_faults(ws, [fault("webhook_forged", claim="error-done", auth="wrong", times=1)])
    second = _upload(up, ws, sample_clip)
    wait_for(lambda: any(e["data"]["status"] == "error" for e in receiver.events(video_id)))
    error = next(r for r in receiver.received if r["json"]["data"] == {"id": video_id, "status": "error"})
    assert error["json"]["message"] and error["headers"]["Authorization"] not in (None, BASIC)
    assert _statuses(receiver, second)[0] == "uploading"  # the real delivery went out too


def test_the_same_seed_draws_the_same_faults(
    emu_control: EmulatorControl, receiver: Receiver, sample_clip: Path
) -> None:
    seen: list[list[str]] = []
    for _ in range(2):
        ws = emu_control.create_workspace(rate_per_second=1000, rate_per_minute=100_000)
        _hooked(emu_control, ws, receiver)
        emu_control.set_faults(ws, [fault("webhook_lost", 0.5), fault("webhook_duplicate", 0.5)], seed=7)
        ids = []
        with (
            httpx.Client(base_url=ws.upload_url, headers=ws.headers, timeout=30) as up,
            httpx.Client(base_url=ws.base_url, headers=ws.headers, timeout=30) as api,
        ):
            for _ in range(3):  # one after the other: the same sequence of deliveries draws the same faults
                ids.append(_upload(up, ws, sample_clip))
                wait_status(api, ids[-1])
        emu_control.forge_webhook(ws)  # answered once sent: every delivery queued before it went out
        seen.append([s for video_id in ids for s in [*_statuses(receiver, video_id), "|"]])
    assert seen[0] == seen[1]
    assert seen[0] != [s for _ in range(3) for s in [*ALL, "|"]]  # something was drawn


def test_forged_on_demand(
    api: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    done_video: dict[str, Any],
) -> None:
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.forge_webhook(ws)  # no webhook URL yet
    assert caught.value.response.json()["error"]["invalid_params"][0]["name"] == "url"
    _hooked(emu_control, ws, receiver)
    before = len(receiver.received)
    answer = emu_control.forge_webhook(ws)
    assert answer["claim"] == "done-unknown" and answer["auth"] == "none" and answer["status"] == 204
    assert len(receiver.received) == before + 1  # exactly one, sent before the answer
    sent = receiver.received[-1]
    assert sent["json"] == {
        "event": "media.update.status",
        "data": {"id": answer["video_id"], "status": "done"},
    }
    assert "Authorization" not in sent["headers"]
    assert api.get(f"/v1/videos/{answer['video_id']}").status_code == 404
    error = emu_control.forge_webhook(ws, "error-done", auth="configured")
    assert error["video_id"] == done_video["id"]
    assert receiver.received[-1]["json"]["data"] == {"id": done_video["id"], "status": "error"}
    assert receiver.received[-1]["headers"]["Authorization"] == BASIC
    assert api.get(f"/v1/videos/{done_video['id']}").json()["data"]["status"] == "done"  # nothing changed
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.forge_webhook(ws, "done-processing")  # no video is processing
    assert caught.value.response.json()["error"]["invalid_params"][0]["name"] == "claim"
    wrong = emu_control.forge_webhook(ws, "done-processing", video_id=done_video["id"], auth="wrong")
    assert wrong["video_id"] == done_video["id"]
    assert receiver.received[-1]["headers"]["Authorization"] not in (None, BASIC)
    emu_control.set_variants(ws, ["webhook-alt-shape"])  # forged in the service's own shape
    emu_control.forge_webhook(ws)
    assert receiver.received[-1]["json"]["type"] == "media.update.status"


def test_webhook_rules_are_checked(ws: Workspace, emu_control: EmulatorControl) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"kind": "webhook_lost", "path": "^/v1/"}, "rules[0].path"),
        ({"kind": "webhook_late", "claim": "done-unknown"}, "rules[0].claim"),
        ({"kind": "webhook_forged", "claim": "maybe"}, "rules[0].claim"),
        ({"kind": "webhook_duplicate", "video_status": "finished"}, "rules[0].video_status"),
        ({"kind": "error", "video_status": "done"}, "rules[0].video_status"),
        ({"kind": "webhook_late", "ms": -1}, "rules[0].ms"),
    ]
    for rule, name in bad:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            emu_control.set_faults(ws, [rule])
        assert [p["name"] for p in caught.value.response.json()["error"]["invalid_params"]] == [name], rule
    every = [fault(kind) for kind in ("webhook_lost", "webhook_duplicate", "webhook_out_of_order")]
    every += [fault("webhook_late", ms=10), fault("webhook_forged", claim="error-done", auth="wrong")]
    emu_control.set_faults(ws, every, seed=3)  # every kind and parameter is accepted

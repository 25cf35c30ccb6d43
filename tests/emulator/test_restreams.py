"""Restreams (4.6): create (name, url, key required), plain list, get, update, delete."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from videoferry.emulator.control import EmulatorControl, Workspace


@pytest.fixture()
def event_id(api: httpx.Client) -> str:
    answer = api.post("/v2/live/events", json={"name": "show", "type": "recurring"})
    return str(answer.json()["data"]["id"])


def test_crud(api: httpx.Client, event_id: str) -> None:
    base = f"/v2/live/events/{event_id}/restreams"
    answer = api.post(base, json={"name": "yt", "url": "rtmp://yt.example/live", "key": "abc"})
    assert answer.status_code == 201
    target = answer.json()["data"]
    assert target["event_id"] == event_id
    assert (target["description"], target["enabled"], target["status"]) == ("", True, "disconnected")
    assert target["key"] == "abc" and target["updated_at"] is None
    listed = api.get(base).json()
    assert listed == {"data": [target]}
    assert api.get(f"{base}/{target['id']}").json()["data"] == target
    changed = api.put(f"{base}/{target['id']}", json={"enabled": False, "description": "d"}).json()["data"]
    assert (changed["enabled"], changed["description"], changed["name"]) == (False, "d", "yt")
    assert changed["updated_at"] is not None
    event = api.get(f"/v2/live/events/{event_id}").json()["data"]
    assert [r["id"] for r in event["restreams"]] == [target["id"]]
    assert api.delete(f"{base}/{target['id']}").json() == {"data": {"success": True}}
    assert api.get(f"{base}/{target['id']}").status_code == 404
    assert api.get(base).json() == {"data": []}


def test_rules(api: httpx.Client, event_id: str) -> None:
    base = f"/v2/live/events/{event_id}/restreams"
    answer = api.post(base, json={})
    assert answer.status_code == 400
    assert [p["name"] for p in answer.json()["error"]["invalid_params"]] == ["name", "url", "key"]
    answer = api.post(base, json={"name": "x", "url": "http://not-rtmp", "key": "k"})
    assert answer.json()["error"]["invalid_params"][0]["name"] == "url"
    created = api.post(base, json={"name": "x", "url": "rtmps://a/b", "key": "k"}).json()["data"]
    assert api.put(f"{base}/{created['id']}", json={"key": ""}).json()["error"]["code"] == 400400
    assert api.get(f"/v2/live/events/{uuid.uuid4()}/restreams").status_code == 404
    assert api.get(f"{base}/{uuid.uuid4()}").json()["error"]["code"] == 400404


def test_key_not_in_request_log(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, event_id: str
) -> None:
    api.post(
        f"/v2/live/events/{event_id}/restreams", json={"name": "x", "url": "rtmp://a/b", "key": "KEY-zz9"}
    )
    assert "KEY-zz9" not in json.dumps(emu_control.requests(ws.workspace_id))

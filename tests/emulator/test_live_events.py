"""Live events (4.5): create rules, defaults, list, update while pending, enable, complete, move, streams."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from videoferry.emulator.control import EmulatorControl, Workspace


def _create(api: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = api.post("/v2/live/events", json={"name": "show", "type": "recurring", **body})
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["data"])


def _invalid(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == 400400
    return [p["name"] for p in error["invalid_params"]]


def test_defaults_and_fields(api: httpx.Client, ws: Workspace) -> None:
    event = _create(api)
    assert event["workspace_id"] == ws.workspace_id
    assert event["parent_id"] == ws.project_id
    for key, value in {
        "auto_start": False,
        "protected": False,
        "time_shift": False,
        "reconnect_window": 600,
        "latency_mode": "standard",
        "show_members": True,
        "chat_active": False,
        "chat_after_stream": True,
        "chat_preview": True,
        "unique_codes_enabled": False,
        "privacy_type": "anywhere",
        "privacy_domains": [],
        "privacy_share": {},
        "moderators": None,
        "updated_at": None,
        "status": "draft",
    }.items():
        assert event[key] == value, key
    assert len(event["streamkey"]) >= 16
    assert event["rtmp_link"].startswith("rtmp://")
    assert event["play_link"].startswith(ws.base_url)
    assert event["stream"]["status"] == "pending" and event["stream"]["event_id"] == event["id"]
    assert event["stream"]["finished_at"] is None
    assert event["record"] == {"parent_id": None}
    assert event["audio"] == {"channel_mapping": None}
    assert {"original", "md", "sm", "xs"} <= set(event["poster"])
    assert api.get(f"/v2/live/events/{event['id']}").json()["data"] == event


def test_every_create_field_is_echoed(api: httpx.Client, ws: Workspace) -> None:
    body = {
        "parent_id": ws.folder_id,
        "auto_start": True,
        "protected": True,
        "time_shift": True,
        "reconnect_window": 1800,
        "scheduled": {"time": "2030-01-02T10:00:00Z"},
        "record": {"parent_id": ws.folder_id},
        "video": {"presets": ["720p", "1080p"]},
        "restreams": [{"name": "yt", "url": "rtmp://yt.example/live", "key": "k1"}],
        "latency_mode": "reduced",
        "show_members": False,
        "chat_active": True,
        "chat_after_stream": False,
        "chat_preview": False,
        "privacy_type": "custom",
        "privacy_domains": ["a.example"],
        "privacy_email_domains": ["corp.example"],
        "privacy_share": {"password": "pw"},
    }
    event = _create(api, **body)
    assert event["parent_id"] == ws.folder_id
    assert event["scheduled"]["time"].startswith("2030-01-02T10:00:00")
    assert event["stream"]["started_at"].startswith("2030-01-02T10:00:00")
    assert event["video"] == {"presets": ["720p", "1080p"]}
    assert event["record"] == {"parent_id": ws.folder_id}
    assert [r["name"] for r in event["restreams"]] == ["yt"]
    for key in ("auto_start", "protected", "time_shift", "reconnect_window", "latency_mode", "show_members"):
        assert event[key] == body[key]
    for key in ("chat_active", "chat_after_stream", "chat_preview", "privacy_type", "privacy_domains"):
        assert event[key] == body[key]
    assert event["privacy_email_domains"] == ["corp.example"]
    assert event["privacy_share"] == {"password": "pw"}


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"name": None, "type": None}, ["name", "type"]),
        ({"type": "weekly"}, ["type"]),
        ({"latency_mode": "low"}, ["latency_mode"]),
        ({"video": {"presets": ["4k"]}}, ["video.presets[0]"]),
        ({"privacy_type": "custom"}, ["privacy_domains"]),
        ({"privacy_share": {"password": "x"}}, ["privacy_share.password"]),
        ({"privacy_share": {"link_hash": "abc12"}}, ["privacy_share.link_hash"]),
        ({"privacy_share": {"link_hash": "abc-12"}}, ["privacy_share.link_hash"]),
        ({"privacy_share": {"password": "pw", "link_hash": "abc123"}}, ["privacy_share.password"]),
        ({"restreams": [{"name": "x"}]}, ["restreams[0].url", "restreams[0].key"]),
        ({"scheduled": {"time": "tomorrow"}}, ["scheduled.time"]),
    ],
)
def test_create_rules(api: httpx.Client, body: dict[str, Any], names: list[str]) -> None:
    sent = {"name": "show", "type": "one-time", **body}
    assert (
        _invalid(api.post("/v2/live/events", json={k: v for k, v in sent.items() if v is not None})) == names
    )


def test_link_hash_link_and_unique_codes_reset(api: httpx.Client) -> None:
    event = _create(api, privacy_share={"link_hash": "Ab12cd"})
    assert event["privacy_share"]["link_hash"] == "Ab12cd"
    assert event["privacy_share"]["link"].endswith("Ab12cd")
    reset = _create(api, privacy_share={"password": "pw"}, unique_codes_enabled=True)
    assert reset["privacy_share"] == {} and reset["unique_codes_enabled"] is True
    changed = api.put(f"/v2/live/events/{event['id']}", json={"unique_codes_enabled": True}).json()["data"]
    assert changed["privacy_share"] == {}


def test_missing_parent_and_ids(api: httpx.Client) -> None:
    answer = api.post(
        "/v2/live/events", json={"name": "x", "type": "one-time", "parent_id": str(uuid.uuid4())}
    )
    assert answer.json()["error"]["code"] == 400236
    assert api.get(f"/v2/live/events/{uuid.uuid4()}").json()["error"]["code"] == 400404
    assert api.get("/v2/live/events/xyz").json()["error"]["code"] == 400301


def test_list_paging_order_and_filters(api: httpx.Client, ws: Workspace) -> None:
    names = ["b", "a", "c"]
    for name in names:
        _create(api, name=name, type="one-time" if name == "a" else "recurring")
    listed = api.get("/v2/live/events").json()
    assert [e["name"] for e in listed["data"]] == ["c", "a", "b"]
    assert listed["meta"] == {
        "pagination": {"page": 1, "per_page": 25, "total": 3},
        "order": {"created_at": "desc"},
    }
    page = api.get("/v2/live/events", params={"page": 2, "per_page": 2, "order": "name.asc"}).json()
    assert [e["name"] for e in page["data"]] == ["c"]
    assert [e["name"] for e in api.get("/v2/live/events", params={"type": "one-time"}).json()["data"]] == [
        "a"
    ]
    assert api.get("/v2/live/events", params={"order": "name.ASC"}).json()["error"]["code"] == 400216
    assert api.get("/v2/live/events", params={"per_page": 0}).json()["error"]["code"] == 400400


def test_update_only_passed_fields_and_only_while_pending(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _create(api, chat_active=True)
    answer = api.put(f"/v2/live/events/{event['id']}", json={"name": "renamed", "reconnect_window": 60})
    data = answer.json()["data"]
    assert (data["name"], data["reconnect_window"], data["chat_active"]) == ("renamed", 60, True)
    assert data["updated_at"] is not None
    refused_body = {"name": "not kept", "privacy_type": "custom"}
    assert _invalid(api.put(f"/v2/live/events/{event['id']}", json=refused_body)) == ["privacy_domains"]
    missing = api.put(
        f"/v2/live/events/{event['id']}", json={"name": "nor this", "parent_id": str(uuid.uuid4())}
    )
    assert missing.json()["error"]["code"] == 400236
    assert api.get(f"/v2/live/events/{event['id']}").json()["data"]["name"] == "renamed"
    api.put(f"/v2/live/events/{event['id']}/enable")
    emu_control.broadcast(ws, event["id"], seconds=1)
    refused = api.put(f"/v2/live/events/{event['id']}", json={"name": "later"})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == 400400
    assert "finished" in refused.json()["error"]["message"]
    api.post(f"/v2/live/events/{event['id']}/stream", json={"started_at": "2031-01-01T00:00:00Z"})
    assert api.put(f"/v2/live/events/{event['id']}", json={"name": "later"}).status_code == 200


def test_enable_complete_move_delete(api: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    event = _create(api)
    assert api.put(f"/v2/live/events/{event['id']}/enable").json()["data"]["status"] == "enabled"
    project_id, folder_id = emu_control.create_project(ws)
    moved = api.put(f"/v2/live/events/{event['id']}/move", json={"parent_id": folder_id}).json()["data"]
    assert moved["parent_id"] == folder_id
    assert _invalid(api.put(f"/v2/live/events/{event['id']}/move", json={})) == ["parent_id"]
    missing = api.put(f"/v2/live/events/{event['id']}/move", json={"parent_id": str(uuid.uuid4())})
    assert missing.json()["error"]["code"] == 400236
    assert api.put(f"/v2/live/events/{event['id']}/complete").json()["data"]["status"] == "completed"
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.broadcast(ws, event["id"], seconds=1)
    assert caught.value.response.status_code == 400
    assert api.put(f"/v2/live/events/{event['id']}/enable").status_code == 400
    assert api.delete(f"/v2/live/events/{event['id']}").json() == {"data": {"success": True}}
    assert api.get(f"/v2/live/events/{event['id']}").status_code == 404


def test_post_schedules_a_new_stream_and_put_moves_the_upcoming_one(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _create(api)
    base = f"/v2/live/events/{event['id']}/stream"
    created = event["stream"]  # a new event has one pending stream
    assert _invalid(api.post(base, json={})) == ["started_at"]
    moved = api.put(base, json={"started_at": "2031-05-02T12:00:00Z"}).json()["data"]
    assert moved["id"] == created["id"] and moved["started_at"].startswith("2031-05-02T12:00:00")
    answer = api.post(base, json={"started_at": "2031-05-09T12:00:00Z"})
    assert answer.status_code == 201
    second = answer.json()["data"]  # spec 4.5: "schedules a new stream", not the pending one again
    assert second["id"] != created["id"] and second["status"] == "pending"
    assert second["started_at"].startswith("2031-05-09T12:00:00")
    current = api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]
    assert current["id"] == created["id"]  # the upcoming stream is the oldest pending one
    api.put(f"/v2/live/events/{event['id']}/enable")
    ran = emu_control.broadcast(ws, event["id"], seconds=1)
    assert ran["stream_id"] == created["id"]
    current = api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]
    assert current["id"] == second["id"]  # the next one is upcoming now
    assert api.put(base, json={"started_at": "2031-05-10T12:00:00Z"}).json()["data"]["id"] == second["id"]
    assert emu_control.broadcast(ws, event["id"], seconds=1)["stream_id"] == second["id"]
    assert api.put(base, json={"started_at": "2031-05-11T12:00:00Z"}).status_code == 400  # none upcoming
    once = _create(api, type="one-time")
    refused = api.post(f"/v2/live/events/{once['id']}/stream", json={"started_at": "2031-05-03T12:00:00Z"})
    assert refused.status_code == 400  # a one-time event has one stream: PUT moves it
    assert api.put(f"/v2/live/events/{once['id']}/stream", json={"started_at": "2031-05-03T12:00:00Z"})


def test_only_an_enabled_event_is_broadcast(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _create(api)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.broadcast(ws, event["id"], seconds=1)
    error = caught.value.response.json()["error"]
    assert caught.value.response.status_code == 400 and error["code"] == 400400
    (param,) = error["invalid_params"]
    assert param["reason"] == "not enabled" and "enable" in param["message"]
    assert api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]["status"] == "pending"
    api.put(f"/v2/live/events/{event['id']}/enable")
    assert emu_control.broadcast(ws, event["id"], seconds=1)["stream_id"] == event["stream"]["id"]


def test_project_scoped_token(api: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    other_project, _ = emu_control.create_project(ws)
    mine = _create(api)
    theirs = _create(api, parent_id=other_project)
    limited = emu_control.create_token(ws, project_ids=[ws.project_id])
    with httpx.Client(base_url=ws.base_url, headers={"Authorization": limited}) as client:
        assert client.get(f"/v2/live/events/{mine['id']}").status_code == 200
        denied = client.get(f"/v2/live/events/{theirs['id']}")
        assert denied.status_code == 403 and denied.json()["error"]["code"] == 100103
        create = client.post(
            "/v2/live/events", json={"name": "x", "type": "one-time", "parent_id": other_project}
        )
        assert create.json()["error"]["code"] == 100103
        assert [e["id"] for e in client.get("/v2/live/events").json()["data"]] == [mine["id"]]

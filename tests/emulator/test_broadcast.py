"""Broadcast simulation: streams, the processed recording with meta, chat (.json/.csv/.txt) and QoS rules."""

from __future__ import annotations

import csv
import hashlib
import io
import uuid
from datetime import datetime, timedelta

import httpx
import pytest

from tests.emulator.conftest import wait_status
from videoferry.emulator.control import EmulatorControl, Workspace


def _event(api: httpx.Client, **body: object) -> dict:
    """A new event, enabled (the ingest takes streams of enabled events only)."""
    answer = api.post("/v2/live/events", json={"name": "show", "type": "recurring", **body})
    assert answer.status_code == 201, answer.text
    event_id = answer.json()["data"]["id"]
    enabled = api.put(f"/v2/live/events/{event_id}/enable")
    assert enabled.status_code == 200, enabled.text
    return dict(enabled.json()["data"])


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_broadcast_makes_a_finished_stream_and_a_done_recording(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _event(api, record={"parent_id": ws.folder_id})
    result = emu_control.broadcast(ws, event["id"], seconds=3, chat_messages=4)
    assert result["stream_id"] == event["stream"]["id"]
    video = wait_status(api, result["video_id"])
    assert video["status"] == "done"
    assert abs(video["duration"] - 3) < 0.5
    assert video["folder_id"] == ws.folder_id
    assert video["meta"] == {"event_id": event["id"], "stream_id": result["stream_id"]}
    stream = api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]
    assert stream["status"] == "finished"
    assert _time(stream["finished_at"]) - _time(stream["started_at"]) == timedelta(seconds=3)
    listed = api.get(f"/v2/live/events/{event['id']}/videos").json()
    assert [v["id"] for v in listed["data"]] == [result["video_id"]]
    assert listed["data"][0]["meta"]["stream_id"] == result["stream_id"]
    assert listed["meta"] == {
        "pagination": {"page": 1, "per_page": 25, "total": 1},
        "order": {"created_at": "asc"},
    }


def test_recurring_many_times_one_time_once(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _event(api)
    first = emu_control.broadcast(ws, event["id"], seconds=1)
    second = emu_control.broadcast(ws, event["id"], seconds=1)
    assert first["stream_id"] != second["stream_id"]
    recordings = api.get(f"/v2/live/events/{event['id']}/videos", params={"per_page": 1, "page": 2}).json()
    assert [v["id"] for v in recordings["data"]] == [second["video_id"]]
    assert recordings["meta"]["pagination"]["total"] == 2
    assert api.get(f"/v2/live/events/{event['id']}").json()["data"]["parent_id"] == ws.project_id
    once = _event(api, type="one-time")
    emu_control.broadcast(ws, once["id"], seconds=1)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        emu_control.broadcast(ws, once["id"], seconds=1)
    assert caught.value.response.json()["error"]["code"] == 400400


def test_chat_formats(api: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    event = _event(api)
    stream_id = emu_control.broadcast(ws, event["id"], seconds=2, chat_messages=3)["stream_id"]
    base = f"/v2/live/events/{event['id']}/stream/{stream_id}/chat"
    messages = api.get(base + ".json").json()["data"]
    assert len(messages) == 3
    assert set(messages[0]) == {
        "id",
        "username",
        "external_id",
        "is_admin",
        "message",
        "created_at",
        "cteated_at_local",
    }
    assert {m["is_admin"] for m in messages} <= {"true", "false"}
    rows = list(csv.reader(io.StringIO(api.get(base + ".csv").text)))
    assert rows[0] == [
        "id",
        "username",
        "external_id",
        "is_admin",
        "message",
        "created_at",
        "cteated_at_local",
    ]
    assert [r[4] for r in rows[1:]] == [m["message"] for m in messages]
    text = api.get(base + ".txt")
    assert text.headers["content-type"].startswith("text/plain")
    assert (
        text.text.splitlines()[0]
        == f"[{messages[0]['created_at']}] {messages[0]['username']}: {messages[0]['message']}"
    )
    assert api.get(base).json()["data"] == messages
    assert api.get(f"/v2/live/events/{event['id']}/stream/{uuid.uuid4()}/chat.json").status_code == 404


def test_qos_windows_buckets_and_errors(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _event(api)
    qos_url = f"/v2/live/events/{event['id']}/qos"
    assert api.get(qos_url).json() == {"session": None, "qos": []}
    result = emu_control.broadcast(ws, event["id"], seconds=95)
    answer = api.get(qos_url).json()
    assert set(answer["session"]) == {"host", "client_ip", "country"}
    samples = answer["qos"]
    assert len(samples) == 4  # samples at 0, 30, 60 and 90 s, one per 30 s bucket
    assert set(samples[0]) == {
        "frame_rate",
        "bitrate_video",
        "bitrate_audio",
        "timestamp",
        "status",
        "packet_loss",
    }
    assert len(api.get(qos_url, params={"group_time": "hour"}).json()["qos"]) in (1, 2)
    assert len(api.get(qos_url, params={"group_time": "5m"}).json()["qos"]) in (1, 2)
    assert len(api.get(qos_url, params={"group_time": "1m"}).json()["qos"]) in (2, 3)
    assert len(api.get(qos_url, params={"group_time": "month"}).json()["qos"]) in (1, 2)
    stream = api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]
    finished = _time(stream["finished_at"])
    late = (finished + timedelta(hours=13)).strftime("%Y-%m-%dT%H:%M:%SZ")
    # the 12-hour cap counts back from the stream's end, not from the requested `to`
    assert api.get(qos_url, params={"to": late}).json()["qos"] == samples
    day = finished.date().isoformat()
    whole_day = api.get(qos_url, params={"from": day, "to": late, "stream_id": result["stream_id"]}).json()
    assert whole_day["qos"] == samples
    assert len(api.get(qos_url, params={"from": day}).json()["qos"]) == len(samples)
    first_minute = (_time(stream["started_at"]) + timedelta(seconds=59)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len(api.get(qos_url, params={"to": first_minute}).json()["qos"]) == 2  # samples at 0 and 30 s
    for params, name in (({"group_time": "fortnight"}, "group_time"), ({"from": "yesterday"}, "from")):
        error = api.get(qos_url, params=params).json()["error"]
        assert error["code"] == 400400 and error["invalid_params"][0]["name"] == name
    other = _event(api)
    other_stream = emu_control.broadcast(ws, other["id"], seconds=1, qos=False)["stream_id"]
    assert api.get(f"/v2/live/events/{other['id']}/qos").json()["qos"] == []
    wrong = api.get(qos_url, params={"stream_id": other_stream})
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == 404404
    foreign = emu_control.create_workspace()
    with httpx.Client(base_url=foreign.base_url, headers=foreign.headers) as client:
        foreign_event = client.post("/v2/live/events", json={"name": "x", "type": "one-time"}).json()["data"]
    assert (
        api.get(qos_url, params={"stream_id": foreign_event["stream"]["id"]}).json()["error"]["code"]
        == 404404
    )


def test_size_bytes_pads_the_recording_with_random_bytes(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _event(api)
    size = 3 * 1024 * 1024 + 17
    answer = emu_control.http.post(
        f"/_emulator/live/events/{event['id']}/broadcast",
        headers=ws.headers,
        json={"seconds": 1, "size_bytes": size},
    )
    assert answer.status_code == 200, answer.text
    video = wait_status(api, answer.json()["video_id"])
    assert video["status"] == "done"  # the clip is still at the start: the probe finds the video
    original = next(a for a in video["assets"] if a["quality"] == "original")
    assert original["file_size"] == size
    body = httpx.get(original["download_link"], timeout=30).content
    assert len(body) == size
    assert hashlib.md5(body).hexdigest() == original["md5"]
    assert body[4:8] == b"ftyp" and len(set(body[-4096:])) > 200  # the clip, then random padding
    too_big = emu_control.http.post(
        f"/_emulator/live/events/{event['id']}/broadcast", headers=ws.headers, json={"size_bytes": 2**40}
    )
    assert too_big.status_code == 400


def test_a_broadcast_longer_than_12_hours_is_capped_at_its_last_12(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = _event(api)
    hours = 20
    result = emu_control.broadcast(ws, event["id"], seconds=1, stream_seconds=hours * 3600, chat_messages=5)
    stream = api.get(f"/v2/live/events/{event['id']}").json()["data"]["stream"]
    started, finished = _time(stream["started_at"]), _time(stream["finished_at"])
    assert finished - started == timedelta(hours=hours)  # simulated: set in the past, nothing waited
    video = wait_status(api, result["video_id"])
    assert video["status"] == "done" and video["duration"] < 2  # the recording stays a short clip
    qos_url = f"/v2/live/events/{event['id']}/qos"
    hourly = api.get(qos_url, params={"group_time": "1h"}).json()["qos"]
    first = _time(hourly[0]["timestamp"])  # the hour bucket holding finished - 12 h, or the one after it
    cap_start = finished - timedelta(hours=12)
    assert cap_start - timedelta(hours=1) < first <= cap_start + timedelta(hours=1)
    assert len(hourly) in (12, 13)  # the last 12 hours of the stream, whatever the bucket alignment
    every = api.get(qos_url, params={"from": stream["started_at"], "to": stream["finished_at"]}).json()["qos"]
    assert len(every) == 12 * 120 + 1  # one record per 30 s over the last 12 hours, both ends included
    early = (started + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api.get(qos_url, params={"to": early}).json()["qos"] == []  # older than the stream's last 12 h
    chat = api.get(f"/v2/live/events/{event['id']}/stream/{result['stream_id']}/chat.json").json()["data"]
    assert _time(chat[-1]["created_at"]) - _time(chat[0]["created_at"]) == timedelta(hours=16)  # 4/5 of it
    too_long = emu_control.http.post(
        f"/_emulator/live/events/{event['id']}/broadcast", headers=ws.headers, json={"stream_seconds": 10**7}
    )
    assert too_long.status_code == 400

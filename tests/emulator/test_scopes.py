"""Tokens of another workspace (401 / 100102, spec 5.2) and token scopes (403 / 100103) on every family."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.emulator.conftest import roomy_workspace, upload_single, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace

Video = dict[str, Any]


def _code(response: httpx.Response) -> int:
    return int(response.json()["error"]["code"])


@pytest.fixture()
def intruder(emu_control: EmulatorControl) -> Iterator[tuple[Workspace, httpx.Client, httpx.Client]]:
    """Another workspace with its own token: its API and upload clients."""
    other = roomy_workspace(emu_control)
    with (
        httpx.Client(base_url=other.base_url, headers=other.headers, timeout=30) as api,
        httpx.Client(base_url=other.upload_url, headers=other.headers, timeout=30) as up,
    ):
        yield other, api, up


def test_a_token_of_another_workspace_is_401_on_every_family(
    api: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    done_video: Video,
    intruder: tuple[Workspace, httpx.Client, httpx.Client],
) -> None:
    other, their_api, their_up = intruder
    vid = done_video["id"]
    event = api.post("/v2/live/events", json={"name": "mine", "type": "recurring"}).json()["data"]
    api.put(f"/v2/live/events/{event['id']}/enable")
    stream_id = emu_control.broadcast(ws, event["id"], seconds=1, qos=False)["stream_id"]
    restream = api.post(
        f"/v2/live/events/{event['id']}/restreams", json={"name": "r", "url": "rtmp://x/live", "key": "k"}
    ).json()["data"]
    batch = api.post(f"/v2/live/events/{event['id']}/unique-codes", json={"name": "b", "codes_amount": 1})
    domain = api.post("/v1/privacy-domains", json={"domain": "mine.example.com"}).json()["data"]
    their_event = their_api.post("/v2/live/events", json={"name": "theirs", "type": "recurring"}).json()[
        "data"
    ]
    ev = f"/v2/live/events/{event['id']}"
    calls: list[tuple[str, str, str, dict[str, Any] | None]] = [
        ("api", "GET", f"/v1/videos/{vid}", None),
        ("api", "PATCH", f"/v1/videos/{vid}", {"title": "x"}),
        ("api", "DELETE", f"/v1/videos/{vid}", None),
        ("api", "POST", f"/v1/videos/{vid}/copy", {}),
        ("api", "POST", f"/v1/videos/{vid}/move", {"project_id": other.project_id}),
        ("api", "POST", f"/v1/videos/{vid}/cut", {"trim": [{"start": 0, "length": 1}]}),
        ("api", "POST", f"/v1/videos/{vid}/concat", {"append": [{"video_id": vid}]}),
        ("api", "PUT", f"/v1/videos/{vid}/chapters", {"items": []}),
        ("api", "GET", f"/v1/videos?project_id={ws.project_id}", None),
        ("api", "GET", f"/v1/videos?folder_id={ws.folder_id}", None),
        ("api", "GET", f"/v1/drm/auth/{ws.project_id}", None),
        ("api", "PUT", f"/v1/privacy-domains/{domain['id']}", {"archived": True}),
        ("api", "DELETE", f"/v1/privacy-domains/{domain['id']}", None),
        ("api", "GET", ev, None),
        ("api", "PUT", ev, {"name": "x"}),
        ("api", "PUT", f"{ev}/enable", None),
        ("api", "PUT", f"{ev}/move", {"parent_id": other.project_id}),
        ("api", "POST", f"{ev}/stream", {"started_at": "2031-01-01T00:00:00Z"}),
        ("api", "GET", f"{ev}/videos", None),
        ("api", "GET", f"{ev}/qos", None),
        ("api", "GET", f"{ev}/stream/{stream_id}/chat.json", None),
        ("api", "GET", f"{ev}/restreams/{restream['id']}", None),
        ("api", "GET", f"{ev}/unique-codes/{batch.json()['data']['id']}", None),
        ("api", "DELETE", ev, None),
        ("api", "POST", "/v2/live/events", {"name": "x", "type": "one-time", "parent_id": ws.project_id}),
        ("api", "PUT", f"/v2/live/events/{their_event['id']}/move", {"parent_id": ws.folder_id}),
        ("api", "GET", f"/v2/live/events?parent_id={ws.project_id}", None),
        (
            "up",
            "POST",
            "/v2/init",
            {"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1},
        ),
        ("up", "POST", "/v2/init", {"type": "attachment", "video_id": vid, "filesize": 1}),
    ]
    for host, method, path, body in calls:
        client = their_api if host == "api" else their_up
        answer = client.request(method, path, json=body)
        assert (answer.status_code, _code(answer)) == (401, 100102), (method, path, answer.text)
    by_header = their_up.post(
        "/v2/video", headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "t"}, content=b"x"
    )
    assert _code(by_header) == 100102
    poster = their_up.post(
        "/v2/poster", headers={"X-Event-ID": event["id"], "X-Poster-URL": "http://127.0.0.1:9/p"}
    )
    assert _code(poster) == 100102
    qos = their_api.get(f"/v2/live/events/{their_event['id']}/qos", params={"stream_id": stream_id})
    assert _code(qos) == 404404  # spec 4.5 names this one: a stream of another workspace is 404404
    assert _code(their_api.get(f"/v1/videos/{uuid.uuid4()}")) == 400404  # nobody's: missing
    assert _code(api.post(f"/v1/videos/{vid}/copy", json={"parent_id": other.project_id})) == 100102
    assert api.get(f"/v1/videos/{vid}").json()["data"]["title"] == "base"  # nothing was done
    assert api.get(ev).status_code == 200


def test_a_read_only_token_reads_and_writes_nothing(
    ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    token = emu_control.create_token(ws, read_only=True)
    vid = done_video["id"]
    with (
        httpx.Client(base_url=ws.base_url, headers={"Authorization": token}) as api,
        httpx.Client(base_url=ws.upload_url, headers={"Authorization": token}) as up,
    ):
        assert api.get(f"/v1/videos/{vid}").status_code == 200
        assert [v["id"] for v in api.get("/v1/videos").json()["data"]] == [vid]
        assert api.get("/v2/live/events").status_code == 200
        for answer in (
            api.patch(f"/v1/videos/{vid}", json={"title": "x"}),
            api.delete(f"/v1/videos/{vid}"),
            api.post(f"/v1/videos/{vid}/copy", json={}),
            api.put(f"/v1/videos/{vid}/chapters", json={"items": []}),
            api.post("/v2/live/events", json={"name": "x", "type": "one-time"}),
            api.post("/v1/privacy-domains", json={"domain": "x.example.com"}),
            up.post(
                "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1}
            ),
            up.post("/v2/video", headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "t"}, content=b"x"),
        ):
            assert (answer.status_code, _code(answer)) == (403, 100103), answer.request.url
    assert [(v["id"], v["title"]) for v in emu_control.videos(ws)] == [(vid, "base")]


def test_a_token_of_some_projects_reaches_their_videos_only(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    done_video: Video,
    clip_factory: Callable[..., Path],
) -> None:
    project, folder = emu_control.create_project(ws)
    theirs = wait_status(
        api, upload_single(up, ws, clip_factory(1.0), title="other project", **{"X-Parent-ID": folder})
    )
    mine = done_video["id"]
    token = emu_control.create_token(ws, project_ids=[ws.project_id])
    denied = (403, 100103)
    with (
        httpx.Client(base_url=ws.base_url, headers={"Authorization": token}) as limited,
        httpx.Client(base_url=ws.upload_url, headers={"Authorization": token}) as limited_up,
    ):
        assert [v["id"] for v in limited.get("/v1/videos").json()["data"]] == [mine]  # the list hides theirs
        for answer in (
            limited.get(f"/v1/videos/{theirs['id']}"),
            limited.patch(f"/v1/videos/{theirs['id']}", json={"title": "x"}),
            limited.delete(f"/v1/videos/{theirs['id']}"),
            limited.put(f"/v1/videos/{theirs['id']}/chapters", json={"items": []}),
            limited.get("/v1/videos", params={"project_id": project}),
            limited.get("/v1/videos", params={"folder_id": folder}),
            limited.post(f"/v1/videos/{mine}/copy", json={"parent_id": folder}),
            limited.post(f"/v1/videos/{mine}/move", json={"project_id": project}),
            limited.post(
                f"/v1/videos/{mine}/cut", json={"trim": [{"start": 0, "length": 1}], "folder_id": folder}
            ),
            limited.post(f"/v1/videos/{mine}/concat", json={"append": [{"video_id": theirs["id"]}]}),
            limited_up.post(
                "/v2/init", json={"type": "video", "parent_id": project, "title": "t", "filesize": 1}
            ),
            limited_up.post("/v2/init", json={"type": "replace", "video_id": theirs["id"], "filesize": 1}),
        ):
            assert (answer.status_code, _code(answer)) == denied, answer.request.url
        assert limited.patch(f"/v1/videos/{mine}", json={"title": "mine"}).status_code == 200
        assert limited.get(f"/v1/videos/{uuid.uuid4()}").status_code == 404
    assert api.get(f"/v1/videos/{theirs['id']}").json()["data"]["title"] == "other project"
    assert len(emu_control.videos(ws)) == 2

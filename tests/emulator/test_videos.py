"""Videos (4.1): list, get, update, delete, copy, move, cut, concat, chapters and the Video fields."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.emulator.conftest import upload_single, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace


def _error(response: httpx.Response) -> dict:
    return dict(response.json()["error"])


@pytest.fixture()
def three(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> list[dict]:
    """Three done videos: 'b' 1 s, 'a' 2 s (in the folder), 'c' 1.5 s, created in that order."""
    made = []
    for title, seconds, extra in (("b", 1.0, {}), ("a", 2.0, {"X-Parent-ID": ws.folder_id}), ("c", 1.5, {})):
        video_id = upload_single(up, ws, clip_factory(seconds), title=title, **extra)
        made.append(wait_status(api, video_id))
    return made


def _titles(api: httpx.Client, **params: str | int) -> list[str]:
    response = api.get("/v1/videos", params=params)
    assert response.status_code == 200, response.text
    return [v["title"] for v in response.json()["data"]]


def test_list_order_filters_and_pagination(api: httpx.Client, ws: Workspace, three: list[dict]) -> None:
    assert _titles(api) == ["c", "a", "b"]
    assert _titles(api, order="created_at.asc") == ["b", "a", "c"]
    assert _titles(api, order="title.desc") == ["c", "b", "a"]
    assert _titles(api, order="duration.asc") == ["b", "c", "a"]
    assert _titles(api, title="a") == ["a"]
    assert _titles(api, folder_id=ws.folder_id) == ["a"]
    assert _titles(api, project_id=ws.project_id, order="title.asc") == ["a", "b", "c"]
    assert _titles(api, project_id=str(uuid.uuid4())) == []
    page = api.get("/v1/videos", params={"page": 2, "per_page": 2, "order": "title.asc"}).json()
    assert page["meta"] == {"pagination": {"page": 2, "per_page": 2, "total": 3}, "order": {"title": "asc"}}
    assert [v["title"] for v in page["data"]] == ["c"]
    assert api.get("/v1/videos", params={"page": 9}).json()["data"] == []
    assert api.get("/v1/videos").json()["meta"]["pagination"] == {"page": 1, "per_page": 25, "total": 3}


def test_updated_at_desc_puts_the_changed_video_first(api: httpx.Client, three: list[dict]) -> None:
    api.patch(f"/v1/videos/{three[0]['id']}", json={"description": "x"})
    assert _titles(api, order="updated_at.desc")[0] == "b"


@pytest.mark.parametrize(
    "order", ["title.DESC", "title.Asc", "status.asc", "title", "title.up", ".asc", "id.desc"]
)
def test_bad_order_is_400216(api: httpx.Client, order: str) -> None:
    response = api.get("/v1/videos", params={"order": order})
    assert response.status_code == 400
    assert _error(response)["code"] == 400216


@pytest.mark.parametrize("params", [{"per_page": 0}, {"per_page": 101}, {"page": "x"}, {"per_page": "many"}])
def test_bad_paging_is_400400(api: httpx.Client, params: dict) -> None:
    response = api.get("/v1/videos", params=params)
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == 400400
    assert error["invalid_params"][0]["name"] == next(iter(params))


def test_page_zero_or_below_is_500500(api: httpx.Client) -> None:
    for page in (0, -1):
        response = api.get("/v1/videos", params={"page": page})
        assert response.status_code == 500
        assert _error(response)["code"] == 500500


def test_views_differ_in_optional_fields(api: httpx.Client, done_video: dict) -> None:
    video_id = done_video["id"]
    listed = api.get("/v1/videos").json()["data"][0]
    got = api.get(f"/v1/videos/{video_id}").json()["data"]
    updated = api.patch(f"/v1/videos/{video_id}", json={"tags": ["x"]}).json()["data"]
    assert "tags" not in listed and "subtitle" not in listed and "player_id" not in listed
    assert got["tags"] == [] and "subtitle" in got and "privacy_share" in got and "short_id" not in got
    assert updated["tags"] == ["x"] and {"deleted_at", "workspace_id", "storage_id", "short_id"} <= set(
        updated
    )
    assert "show_on_load" in listed["chapters"] and "show_on_load" not in got["chapters"]


def test_done_video_fields(done_video: dict, ws: Workspace) -> None:
    v = done_video
    assert v["status"] == "done" and v["version"] == 1 and v["project_id"] == ws.project_id
    assert v["duration"] == pytest.approx(2.0, abs=0.1)
    assert v["has_audio"] is True
    assert v["updated_at"] is None and v["created_at"].endswith("Z")
    qualities = {a["quality"]: a for a in v["assets"]}
    assert set(qualities) == {"original", "360p"}
    assert qualities["original"]["resolution"] == "160x120"
    assert qualities["original"]["md5"] and qualities["original"]["file_size"] > 0
    assert v["audio_tracks"][0]["filetype"] == "aac"
    assert v["poster"]["status"] == "done"
    assert v["play_link"].startswith(ws.base_url) and v["hls_link"].endswith(".m3u8")
    assert v["chapters"]["items"] == []


def test_the_poster_links_serve_the_first_picture_as_jpeg(done_video: dict, ws: Workspace) -> None:
    poster = done_video["poster"]
    with httpx.Client() as anyone:  # image links, like download links, need no token
        for size in ("original", "md", "sm", "xs"):
            image = anyone.get(poster[size])
            assert image.status_code == 200 and image.headers["content-type"] == "image/jpeg"
            assert image.content[:3] == b"\xff\xd8\xff" and image.content[-2:] == b"\xff\xd9"
        other = anyone.get(poster["original"].replace(poster["id"], str(uuid.uuid4())))
        assert other.status_code == 404  # another version's poster (or none) is not served


def test_hd_video_gets_every_quality_up_to_its_height(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    video_id = upload_single(up, ws, clip_factory(0.5, width=854, height=480, audio=False))
    video = wait_status(api, video_id)
    assert [a["quality"] for a in video["assets"]] == ["original", "360p", "480p"]
    assert "audio_tracks" not in video and video["has_audio"] is False
    assert {a["resolution"] for a in video["assets"]} == {"854x480", "640x360"}


def test_update_changes_only_passed_fields(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}"
    first = api.patch(path, json={"description": "d1"}).json()["data"]
    assert first["title"] == "base" and first["description"] == "d1"
    assert first["updated_at"] is not None
    second = api.patch(
        path,
        json={
            "privacy_type": "custom",
            "privacy_domains": ["a.example"],
            "tags": ["t"],
            "additional_materials_enabled": True,
            "title": "new",
        },
    ).json()["data"]
    assert (second["privacy_type"], second["privacy_domains"], second["tags"]) == (
        "custom",
        ["a.example"],
        ["t"],
    )
    assert second["additional_materials_enabled"] is True and second["description"] == "d1"
    assert second["updated_at"] >= first["updated_at"]
    unchanged = api.patch(path, json={}).json()["data"]
    assert unchanged["updated_at"] == second["updated_at"]


def test_update_validation(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}"
    oneof = api.patch(path, json={"privacy_type": "friends"})
    assert _error(oneof)["invalid_params"][0]["reason"] == "oneof"
    assert _error(oneof)["invalid_params"][0]["message"] == "anywhere nowhere custom"
    custom = api.patch(path, json={"privacy_type": "custom"})
    assert _error(custom)["invalid_params"][0] == {
        "index": 0,
        "name": "privacy_domains",
        "reason": "notempty_if",
        "message": "privacy_type custom",
    }
    empty_title = api.patch(path, json={"title": " "})
    assert _error(empty_title)["invalid_params"][0]["name"] == "title"
    assert api.get(path).json()["data"]["updated_at"] is None


def test_delete_is_permanent(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}"
    response = api.delete(path)
    assert response.status_code == 200 and response.json() == {"data": {"success": True}}
    assert api.get(path).status_code == 404
    assert api.delete(path).status_code == 404
    assert api.get("/v1/videos").json()["meta"]["pagination"]["total"] == 0


def test_copy(api: httpx.Client, ws: Workspace, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}/copy"
    same_place = api.post(path, json={})
    assert same_place.status_code == 201
    copy = same_place.json()["data"]
    assert copy["id"] != done_video["id"] and copy["status"] == "done"
    assert (copy["project_id"], copy["folder_id"], copy["title"]) == (ws.project_id, None, "base")
    assert copy["duration"] == done_video["duration"]
    into_folder = api.post(path, json={"parent_id": ws.folder_id}).json()["data"]
    assert (into_folder["project_id"], into_folder["folder_id"]) == (ws.project_id, ws.folder_id)
    assert api.get("/v1/videos").json()["meta"]["pagination"]["total"] == 3
    assert _error(api.post(path))["code"] == 1
    assert _error(api.post(path, json={"parent_id": "bad"}))["code"] == 400301


def test_copy_checks_the_folder_before_the_video(api: httpx.Client) -> None:
    response = api.post(f"/v1/videos/{uuid.uuid4()}/copy", json={"parent_id": str(uuid.uuid4())})
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == 400236
    assert error["invalid_params"][0]["name"] == "parent_id"
    assert api.post(f"/v1/videos/{uuid.uuid4()}/copy", json={}).status_code == 404


def test_move(api: httpx.Client, emu_control: EmulatorControl, ws: Workspace, done_video: dict) -> None:
    project_id, folder_id = emu_control.create_project(ws)
    path = f"/v1/videos/{done_video['id']}/move"
    moved = api.post(path, json={"project_id": project_id, "folder_id": folder_id}).json()["data"]
    assert (moved["id"], moved["project_id"], moved["folder_id"]) == (done_video["id"], project_id, folder_id)
    assert moved["updated_at"] is not None
    back = api.post(path, json={"project_id": ws.project_id}).json()["data"]
    assert (back["project_id"], back["folder_id"]) == (ws.project_id, None)
    assert _error(api.post(path, json={}))["invalid_params"][0] == {
        "index": 0,
        "name": "project_id",
        "reason": "required",
        "message": "string",
    }
    assert _error(api.post(path, json={"project_id": str(uuid.uuid4())}))["invalid_params"][0]["reason"] == (
        "not exists"
    )
    wrong_folder = api.post(path, json={"project_id": ws.project_id, "folder_id": folder_id})
    assert _error(wrong_folder)["code"] == 400236


def test_chapters_replace_and_clear(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}/chapters"
    items = [{"time": 0, "title": "Intro"}, {"time": 10000, "title": "Ten seconds"}]
    response = api.put(path, json={"items": items, "enabled": True})
    assert response.status_code == 200
    assert response.json() == {"data": {"items": items, "enabled": True}}
    video = api.get(f"/v1/videos/{done_video['id']}").json()["data"]
    assert video["chapters"] == {"items": items, "enabled": True}
    replaced = api.put(path, json={"items": [{"time": 500, "title": "Half"}], "enabled": True}).json()["data"]
    assert replaced["items"] == [{"time": 500, "title": "Half"}]
    cleared = api.put(path, json={"items": []}).json()["data"]
    assert cleared == {"items": [], "enabled": True}
    assert _error(api.put(path, json={"enabled": True}))["invalid_params"][0]["name"] == "items"
    negative = api.put(path, json={"items": [{"time": -1, "title": "x"}]})
    assert _error(negative)["invalid_params"][0]["name"] == "items[0].time"
    no_title = api.put(path, json={"items": [{"time": 1}]})
    assert _error(no_title)["invalid_params"][0]["name"] == "items[0].title"


def test_cut_writes_back_to_the_same_id(
    api: httpx.Client, emu_control: EmulatorControl, ws: Workspace, done_video: dict
) -> None:
    video_id = done_video["id"]
    before = {a["quality"]: a for a in done_video["assets"]}["original"]
    response = api.post(
        f"/v1/videos/{video_id}/cut",
        json={
            "trim": [{"start": 0.5, "length": 1.0}],
            "crop": {"w": 80, "h": 60, "x": 10, "y": 10},
            "title": "cut",
        },
    )
    assert response.status_code == 200, response.text
    cut = response.json()["data"]
    assert cut["id"] == video_id and cut["version"] == 2 and cut["title"] == "cut"
    assert cut["duration"] == pytest.approx(1.0, abs=0.1)
    done = wait_status(api, video_id)
    assert done["status"] == "done"
    after = {a["quality"]: a for a in done["assets"]}["original"]
    assert after["md5"] != before["md5"] and after["resolution"] == "80x60"
    stored = {v["id"]: v for v in emu_control.videos(ws)}[video_id]
    assert stored["file_size"] == after["file_size"]
    assert api.get("/v1/videos").json()["meta"]["pagination"]["total"] == 1


def test_cut_validation(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}/cut"
    assert _error(api.post(path, json={}))["invalid_params"][0]["reason"] == "required_without"
    past_end = _error(api.post(path, json={"trim": [{"start": 5}]}))
    assert past_end["code"] == 400400 and past_end["invalid_params"][0]["name"] == "trim[0].start"
    outside = _error(api.post(path, json={"crop": {"w": 200, "h": 60, "x": 0, "y": 0}}))
    assert outside["invalid_params"][0]["name"] == "crop"
    missing = _error(api.post(path, json={"crop": {"w": 20}}))
    assert {p["name"] for p in missing["invalid_params"]} == {"crop.h", "crop.x", "crop.y"}
    assert _error(api.post(path, json={"trim": [{"start": "0"}]}))["code"] == 400102
    assert api.post(f"/v1/videos/{uuid.uuid4()}/cut", json={"trim": [{"start": 0}]}).status_code == 404
    assert api.get(f"/v1/videos/{done_video['id']}").json()["data"]["version"] == 1


def test_concat_makes_a_new_video(
    api: httpx.Client, up: httpx.Client, ws: Workspace, done_video: dict, clip_factory: Callable[..., Path]
) -> None:
    other = wait_status(api, upload_single(up, ws, clip_factory(1.0), title="other"))
    response = api.post(
        f"/v1/videos/{done_video['id']}/concat",
        json={"prepend": [{"video_id": other["id"]}], "append": [{"video_id": other["id"]}]},
    )
    assert response.status_code == 201, response.text
    joined = response.json()["data"]
    assert joined["id"] not in (done_video["id"], other["id"])
    assert joined["duration"] == pytest.approx(4.0, abs=0.15)
    assert wait_status(api, joined["id"])["status"] == "done"
    source = api.get(f"/v1/videos/{done_video['id']}").json()["data"]
    assert (source["version"], source["duration"]) == (1, done_video["duration"])
    assert api.get("/v1/videos").json()["meta"]["pagination"]["total"] == 3


def test_concat_validation(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}/concat"
    assert _error(api.post(path, json={}))["invalid_params"][0]["reason"] == "required_without"
    ghost = _error(api.post(path, json={"append": [{"video_id": str(uuid.uuid4())}]}))
    assert ghost["invalid_params"][0] == {
        "index": 0,
        "name": "append[0].video_id",
        "reason": "not exists",
        "message": "existing video id",
    }
    assert _error(api.post(path, json={"append": [{}]}))["invalid_params"][0]["name"] == "append[0].video_id"
    assert _error(api.post(path, json={"append": [{"video_id": done_video["id"]}], "replace": "no"}))[
        "code"
    ] == (400102)


def test_operations_need_a_processed_video(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    init = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "p", "filesize": 10}
    )
    video_id = init.json()["data"]["id"]
    for op, body in (
        ("cut", {"trim": [{"start": 0}]}),
        ("concat", {"append": [{"video_id": video_id}]}),
        ("copy", {}),
    ):
        response = api.post(f"/v1/videos/{video_id}/{op}", json=body)
        assert response.status_code == 400, op
        assert _error(response)["invalid_params"][0]["reason"] == "not ready"

"""Variants through raw HTTP (1/2): switching them, lists, the other methods, answer bodies, cut's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tests.emulator.conftest import wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.server import EmulatorServer
from videoferry.emulator.variants import VARIANTS, Variants, make_variants
from videoferry.flows.cli import app as cli_app

Video = dict[str, Any]


def _init(up: httpx.Client, ws: Workspace, title: str, parent: str | None = None) -> dict[str, Any]:
    body = {"type": "video", "parent_id": parent or ws.project_id, "title": title, "filesize": 10}
    response = up.post("/v2/init", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


def _titles(api: httpx.Client, **params: Any) -> list[str]:
    response = api.get("/v1/videos", params=params)
    assert response.status_code == 200, response.text
    return [v["title"] for v in response.json()["data"]]


# ---------------------------------------------------------------------------------------- switching them


def test_unknown_and_conflicting_variants_are_refused(emu_control: EmulatorControl, ws: Workspace) -> None:
    refusals = ((["no-such-variant"], "no-such-variant"), (["clock-ahead", "clock-behind"], "clock"))
    for names, named in refusals:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            emu_control.set_variants(ws, names)
        error = caught.value.response.json()["error"]
        assert error["code"] == 400400 and named in str(error)
    with pytest.raises(httpx.HTTPStatusError):
        emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=-1)
    with pytest.raises(ValueError, match="no-such-variant"):
        make_variants(["no-such-variant"])
    with pytest.raises(ValueError, match="no-such-variant"):
        EmulatorServer(variants=["no-such-variant"])
    result = CliRunner().invoke(cli_app, ["emulator", "--port", "0", "--variant", "no-such-variant"])
    assert result.exit_code != 0 and "no-such-variant" in result.output


def test_set_get_and_replace(emu_control: EmulatorControl, ws: Workspace) -> None:
    listed = httpx.get(f"{ws.base_url}/_emulator/variants").json()["data"]  # no token needed
    assert listed == VARIANTS == emu_control.variants()
    answer = emu_control.set_variants(ws, ["no-total", "list-lag"], list_lag_seconds=5)
    assert answer == {
        "variants": ["list-lag", "no-total"],
        "clock_offset_seconds": 600.0,
        "list_lag_seconds": 5.0,
        "endpoint_ttl_seconds": 60.0,
        "title_cap": 128,
        "video_quota": 10,
        "refuse_after": 0,
        "quota_status": 400,
        "processing_concurrency": 2,
        "queue_seconds": 1.0,
        "patch_body_cap": 64 * 1024 * 1024,
    }
    assert emu_control.set_variants(ws, ["ids-upper"])["variants"] == ["ids-upper"]  # replaces
    assert Variants(frozenset({"ids-upper"})).has("ids-upper") and not Variants().has("ids-upper")


def test_server_wide_defaults(tmp_path: Path) -> None:
    with EmulatorServer(data_dir=tmp_path, variants=["no-total"]) as server:
        control = EmulatorControl(server.base_url)
        default_ws = Workspace.from_dict(server.default)
        for ws, has_total in (
            (default_ws, False),
            (control.create_workspace(), False),
            (control.create_workspace(variants=[]), True),
            (control.create_workspace(variants=["ids-upper"]), True),
        ):
            body = httpx.get(f"{ws.base_url}/v1/videos", headers=ws.headers).json()
            assert ("total" in body["meta"]["pagination"]) is has_total
        control.reset()
        body = httpx.get(f"{default_ws.base_url}/v1/videos", headers=default_ws.headers).json()
        assert "total" not in body["meta"]["pagination"]
        control.close()


# ------------------------------------------------------------------------------------------------ lists


def test_title_filter_ignored(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    _init(up, ws, "a")
    _init(up, ws, "b", ws.folder_id)
    assert _titles(api, title="a") == ["a"]
    emu_control.set_variants(ws, ["ignore-title-filter"])
    assert sorted(_titles(api, title="a")) == ["a", "b"]
    assert _titles(api, folder_id=ws.folder_id) == ["b"]  # the other filters still work


def test_parent_filters_ignored(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    other_project, other_folder = emu_control.create_project(ws)
    _init(up, ws, "a")
    _init(up, ws, "b", ws.folder_id)
    _init(up, ws, "c", other_folder)
    assert _titles(api, folder_id=ws.folder_id) == ["b"]
    assert _titles(api, project_id=other_project) == ["c"]
    emu_control.set_variants(ws, ["ignore-parent-filter"])
    assert sorted(_titles(api, folder_id=ws.folder_id)) == ["a", "b", "c"]
    assert sorted(_titles(api, project_id=other_project)) == ["a", "b", "c"]
    assert _titles(api, title="c", project_id=ws.project_id) == ["c"]  # the title filter still works


@pytest.mark.parametrize(("variant", "cap"), [("page-cap-25", 25), ("page-cap-10", 10)])
def test_pages_capped(
    variant: str, cap: int, api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    for n in range(27):
        _init(up, ws, f"v{n}")
    body = api.get("/v1/videos", params={"per_page": 100}).json()
    assert len(body["data"]) == 27 and body["meta"]["pagination"]["per_page"] == 100
    emu_control.set_variants(ws, [variant])
    body = api.get("/v1/videos", params={"per_page": 100}).json()
    assert len(body["data"]) == cap
    assert body["meta"]["pagination"] == {"page": 1, "per_page": cap, "total": 27}
    last = api.get("/v1/videos", params={"per_page": 100, "page": 27 // cap + 1}).json()
    assert len(last["data"]) == 27 % cap
    assert len(api.get("/v1/videos", params={"per_page": 5}).json()["data"]) == 5  # smaller asks stay


def test_no_total(api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    _init(up, ws, "a")
    assert api.get("/v1/videos").json()["meta"]["pagination"] == {"page": 1, "per_page": 25, "total": 1}
    emu_control.set_variants(ws, ["no-total"])
    assert api.get("/v1/videos").json()["meta"]["pagination"] == {"page": 1, "per_page": 25}


def test_list_lag_then_listed(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    _init(up, ws, "at-once")
    assert _titles(api) == ["at-once"]  # default: listed at once
    emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=3600)
    made = _init(up, ws, "late")
    assert _titles(api) == []  # "at-once" too is younger than the lag
    assert api.get(f"/v1/videos/{made['id']}").status_code == 200  # GET sees it at once
    emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=1.0)
    wait_for(lambda: sorted(_titles(api)) == ["at-once", "late"], timeout=15)


def test_list_lag_covers_every_create(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    done_video: Video,
    sample_clip: Path,
) -> None:
    emu_control.set_variants(ws, ["list-lag", "cut-new-video"], list_lag_seconds=3600)
    source = done_video["id"]
    created = [
        _init(up, ws, "init")["id"],
        up.post(
            "/v2/video",
            content=sample_clip.read_bytes(),
            headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "single"},
        ).json()["data"]["id"],
        api.post(f"/v1/videos/{source}/copy", json={}).json()["data"]["id"],
        api.post(f"/v1/videos/{source}/concat", json={"append": [{"video_id": source}]}).json()["data"]["id"],
        api.post(f"/v1/videos/{source}/cut", json={"trim": [{"start": 0, "length": 1}]}).json()["data"]["id"],
    ]
    assert len(set(created) | {source}) == 6
    assert _titles(api) == []  # the source too is younger than the lag
    assert all(api.get(f"/v1/videos/{vid}").status_code == 200 for vid in created)
    emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=0)
    assert len(api.get("/v1/videos").json()["data"]) == 6


# ------------------------------------------------------------------------------------- the other methods

_OPERATIONS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    # variant: (path, default method, the variant's method, body)
    "update-put": ("/v1/videos/{id}", "PATCH", "PUT", {"title": "x"}),
    "move-put": ("/v1/videos/{id}/move", "POST", "PUT", {"project_id": "{project}"}),
    "copy-put": ("/v1/videos/{id}/copy", "POST", "PUT", {}),
    "cut-put": ("/v1/videos/{id}/cut", "POST", "PUT", {"trim": [{"start": 0, "length": 1}]}),
    "concat-put": ("/v1/videos/{id}/concat", "POST", "PUT", {"append": [{"video_id": "{id}"}]}),
    "chapters-post": ("/v1/videos/{id}/chapters", "PUT", "POST", {"items": [{"time": 0, "title": "c"}]}),
}


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value.format(**ids) if isinstance(value, str) else value


def _code(response: httpx.Response) -> int:
    return int(response.json()["error"]["code"])


@pytest.mark.parametrize("variant", sorted(_OPERATIONS))
def test_the_other_method(
    variant: str, api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    template, default, other, body_template = _OPERATIONS[variant]
    path = template.format(id=done_video["id"])
    body = _fill(body_template, {"id": done_video["id"], "project": ws.project_id})

    def works(method: str) -> None:
        wait_status(api, done_video["id"])  # cut processes the video again
        answer = api.request(method, path, json=body)
        assert answer.status_code in (200, 201), answer.text

    refused = api.request(other, path, json=body)
    assert refused.status_code == 405 and _code(refused) == 400405  # the default takes the other method
    works(default)
    emu_control.set_variants(ws, [variant])
    refused = api.request(default, path, json=body)
    assert refused.status_code == 405 and _code(refused) == 400405
    works(other)
    tokenless = httpx.request(other, ws.base_url + path, json=body)
    assert _code(tokenless) == 100101  # both plausible methods are routed; auth comes before the 405
    assert httpx.request("TRACE", ws.base_url + path).status_code == 405  # no method: 405 before auth


def test_video_put(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path) -> None:
    headers = {"X-Parent-ID": ws.project_id, "X-Video-Title": "put", "Content-Type": "video/mp4"}
    data = sample_clip.read_bytes()
    assert up.put("/v2/video", content=data, headers=headers).status_code == 405
    assert up.post("/v2/video", content=data, headers=headers).status_code == 200
    emu_control.set_variants(ws, ["video-put"])
    refused = up.post("/v2/video", content=data, headers=headers)
    assert refused.status_code == 405 and _code(refused) == 400405
    assert up.put("/v2/video", content=data, headers=headers).status_code == 200


# --------------------------------------------------------------------------------------- answer bodies

_BODIES: dict[str, dict[str, Any]] = {
    "copy": {},
    "move": {"project_id": "{project}"},
    "cut": {"trim": [{"start": 0, "length": 1}]},
    "concat": {"append": [{"video_id": "{id}"}]},
}


@pytest.mark.parametrize("operation", sorted(_BODIES))
def test_bodies(
    operation: str, api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    body = _fill(_BODIES[operation], {"id": vid, "project": ws.project_id})

    def call() -> httpx.Response:
        wait_status(api, vid)  # cut processes the source again
        response = api.post(f"/v1/videos/{vid}/{operation}", json=body)
        assert response.status_code in (200, 201), response.text
        return response

    full = call().json()["data"]
    assert {"id", "title", "status"} <= set(full)
    emu_control.set_variants(ws, ["empty-bodies"])
    empty = call()
    assert empty.content == b"" and empty.headers["content-length"] == "0"
    emu_control.set_variants(ws, ["id-only-bodies"])
    only = call().json()
    assert list(only) == ["data"] and list(only["data"]) == ["id"]
    assert (only["data"]["id"] == vid) is (operation in ("move", "cut"))


def test_cut_makes_a_new_video(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    emu_control.set_variants(ws, ["cut-new-video"])
    beside = api.post(f"/v1/videos/{vid}/cut", json={"trim": [{"start": 0, "length": 1}]}).json()["data"]
    assert beside["id"] != vid and beside["title"] == "base" and beside["version"] == 1
    assert (beside["project_id"], beside["folder_id"]) == (done_video["project_id"], done_video["folder_id"])
    body = {"trim": [{"start": 0, "length": 0.5}], "folder_id": ws.folder_id, "title": "cut"}
    placed = api.post(f"/v1/videos/{vid}/cut", json=body).json()["data"]
    assert placed["id"] not in (vid, beside["id"]) and placed["title"] == "cut"
    assert (placed["project_id"], placed["folder_id"]) == (ws.project_id, ws.folder_id)
    assert wait_status(api, beside["id"])["duration"] == pytest.approx(1.0, abs=0.15)
    assert wait_status(api, placed["id"])["duration"] == pytest.approx(0.5, abs=0.15)
    source = api.get(f"/v1/videos/{vid}").json()["data"]
    for key in ("version", "duration", "title", "folder_id", "status"):
        assert source[key] == done_video[key]
    stored = {v["id"]: v["md5"] for v in emu_control.videos(ws)}
    assert len({stored[vid], stored[beside["id"]], stored[placed["id"]]}) == 3
    emu_control.set_variants(ws, [])
    again = api.post(f"/v1/videos/{vid}/cut", json={"trim": [{"start": 0, "length": 1}]}).json()["data"]
    assert again["id"] == vid and again["version"] == done_video["version"] + 1  # the default: written back

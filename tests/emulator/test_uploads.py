"""Uploads (4.2): /v2/init per type, tus endpoint, plain POST, /v2/video with body or URL, replace, trim."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.ids import to_base58
from videoferry.emulator.server import EmulatorServer

TUS = {"Tus-Resumable": "1.0.0", "Content-Type": "application/offset+octet-stream"}


def _error(response: httpx.Response) -> dict:
    return dict(response.json()["error"])


def _error_events(receiver: Receiver, video_id: str) -> list[dict]:
    return [e for e in receiver.events(video_id) if e["data"]["status"] == "error"]


def _init(up: httpx.Client, ws: Workspace, size: int, **extra: object) -> dict:
    body = {"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": size, **extra}
    response = up.post("/v2/init", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


def _patch(endpoint: str, offset: int, data: bytes, **headers: str) -> httpx.Response:
    return httpx.patch(endpoint, content=data, headers={**TUS, "Upload-Offset": str(offset), **headers})


def test_init_creates_a_pending_video(api: httpx.Client, up: httpx.Client, ws: Workspace) -> None:
    data = _init(up, ws, 1234, filename="a.mp4", description="desc", subtitle="sub", parent_id=ws.folder_id)
    assert set(data) == {"id", "endpoint"}
    assert data["endpoint"].startswith(ws.upload_url + "/")
    assert ws.token not in data["endpoint"]
    video = api.get(f"/v1/videos/{data['id']}").json()["data"]
    assert (video["status"], video["folder_id"], video["description"], video["subtitle"]) == (
        "pending",
        ws.folder_id,
        "desc",
        "sub",
    )
    assert video["assets"] == []


def test_init_validation_per_type(up: httpx.Client, ws: Workspace) -> None:
    def names(body: dict) -> set[str]:
        response = up.post("/v2/init", json=body)
        assert response.status_code == 400, body
        return {p["name"] for p in _error(response)["invalid_params"]}

    assert names({}) == {"type"}  # filesize is for tus only (a plain POST to the endpoint needs none)
    assert names({"type": "video", "filesize": 1}) == {"parent_id", "title"}
    assert names({"type": "attachment", "filesize": 1}) == {"video_id"}
    assert names({"type": "replace", "filesize": 1}) == {"video_id"}
    assert names({"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 0}) == {"filesize"}
    preview = {
        "type": "video",
        "parent_id": ws.project_id,
        "title": "t",
        "filesize": 5,
        "preview": {"quality": "4k"},
    }
    assert names(preview) == {"preview.quality", "preview.start", "preview.length"}
    clip_of_nothing = {
        "type": "attachment",
        "video_id": str(uuid.uuid4()),
        "preview": {"start": 0, "length": 1},
    }
    assert names(clip_of_nothing) == {"preview"}
    assert names({"type": "attachment", "video_id": str(uuid.uuid4()), "filesize": 3}) == {"video_id"}
    missing_parent = up.post(
        "/v2/init", json={"type": "video", "parent_id": str(uuid.uuid4()), "title": "t", "filesize": 1}
    )
    assert _error(missing_parent)["code"] == 400236
    assert _error(up.post("/v2/init", json={"type": "video", "filesize": "1"}))["code"] == 400102
    assert _error(up.post("/v2/init", content=b""))["code"] == 1


def test_tus_resource(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(1.0).read_bytes()
    session = _init(up, ws, len(data))
    endpoint = session["endpoint"]
    head = httpx.head(endpoint)
    assert head.status_code == 200
    assert (head.headers["upload-offset"], head.headers["upload-length"]) == ("0", str(len(data)))
    assert head.headers["tus-resumable"] == "1.0.0"
    first = _patch(endpoint, 0, data[:1000])
    assert first.status_code == 204 and first.headers["upload-offset"] == "1000"
    assert api.get(f"/v1/videos/{session['id']}").json()["data"]["status"] == "uploading"
    wrong = _patch(endpoint, 0, data[1000:])
    assert wrong.status_code == 409
    assert httpx.head(endpoint).headers["upload-offset"] == "1000"
    assert _patch(endpoint, 1000, data[1000:], **{"Content-Type": "video/mp4"}).status_code == 415
    assert _patch(endpoint, 1000, data[1000:], **{"Tus-Resumable": "0.2.2"}).status_code == 412
    assert httpx.patch(endpoint, content=b"x", headers=TUS).status_code == 400
    assert _patch(endpoint, 1000, data[1000:] + b"extra").status_code == 413
    last = _patch(endpoint, 1000, data[1000:])
    assert last.status_code == 204 and last.headers["upload-offset"] == str(len(data))
    video = wait_status(api, session["id"])
    assert video["status"] == "done"
    assert {a["quality"]: a for a in video["assets"]}["original"]["file_size"] == len(data)
    options = httpx.options(endpoint)
    assert options.headers["tus-version"] == "1.0.0"
    assert httpx.get(endpoint).status_code == 405


def test_a_patch_keeps_no_bytes_past_the_offset(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emulator_server: EmulatorServer,
    clip_factory: Callable[..., Path],
) -> None:
    """Bytes the session's file holds past its offset (a write that failed before the offset moved on) are
    not kept: the next PATCH continues at the offset and the stored file is exactly the bytes acknowledged.
    The route truncates only then (a truncate to 0 on every first PATCH made ext4 flush the file on close)."""
    data = clip_factory(1.0).read_bytes()
    session = _init(up, ws, len(data))
    endpoint = session["endpoint"]
    assert _patch(endpoint, 0, data[:-10]).headers["upload-offset"] == str(len(data) - 10)
    hit = emulator_server.emu.uploads.session_by_secret(endpoint.rsplit("/", 1)[1])
    assert hit is not None
    stored = hit[1].path
    with stored.open("ab") as out:
        out.write(b"\0" * 100)  # past the offset, as a write cut short by an error would leave them
    last = _patch(endpoint, len(data) - 10, data[-10:])
    assert last.status_code == 204 and last.headers["upload-offset"] == str(len(data))
    assert wait_status(api, session["id"])["status"] == "done"
    assert stored.read_bytes() == data


def test_filesize_is_for_tus_only(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(1.0).read_bytes()
    body = {"type": "video", "parent_id": ws.project_id, "title": "no size"}
    session = up.post("/v2/init", json=body).json()["data"]  # spec 4.2: filesize "required for tus"
    head = httpx.head(session["endpoint"])
    assert head.headers["upload-offset"] == "0" and "upload-length" not in head.headers
    refused = _patch(session["endpoint"], 0, data)
    assert refused.status_code == 400 and "filesize" in refused.text  # tus needs the size
    assert httpx.post(session["endpoint"], content=data).status_code == 204  # a plain POST needs none
    video = wait_status(api, session["id"])
    assert video["status"] == "done"
    assert {a["quality"]: a for a in video["assets"]}["original"]["file_size"] == len(data)


def test_preview_is_honoured(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(2.0, width=320, height=240).read_bytes()
    asked = {"start": 0.5, "length": 5, "quality": "360p"}
    session = _init(up, ws, len(data), preview=asked)
    pending = api.get(f"/v1/videos/{session['id']}").json()["data"]
    assert pending["preview"] == {**asked, "status": "pending"}
    assert _patch(session["endpoint"], 0, data).status_code == 204
    video = wait_status(api, session["id"])
    assert video["preview"]["status"] == "done"
    assert video["preview"]["length"] == pytest.approx(1.5, abs=0.1)  # cut to what the video holds
    assert video["preview"]["resolution"] == "320x240"  # 360p, never above the source
    late = _init(up, ws, len(data), preview={"start": 60, "length": 5})
    _patch(late["endpoint"], 0, data)
    past_the_end = {"start": 60, "length": 5, "quality": "360p", "status": "error"}
    assert wait_status(api, late["id"])["preview"] == past_the_end
    plain = _init(up, ws, len(data))
    assert "preview" not in api.get(f"/v1/videos/{plain['id']}").json()["data"]


def test_endpoint_needs_no_token_and_is_not_an_api_call(
    up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    session = _init(up, ws, 3)
    assert (
        httpx.patch(
            session["endpoint"],
            content=b"abc",
            headers={**TUS, "Upload-Offset": "0", "Authorization": "Bearer wrong"},
        ).status_code
        == 204
    )
    entries = [e for e in emu_control.requests(ws.workspace_id) if e["host"] == "upload"]
    assert [(e["method"], e["api"]) for e in entries] == [("POST", True), ("PATCH", False)]


def test_unknown_endpoint_is_404(ws: Workspace) -> None:
    response = httpx.head(f"{ws.upload_url}/upload/not-a-real-secret")
    assert response.status_code == 404
    assert httpx.post(f"{ws.upload_url}/upload/nope", content=b"x").json()["error"]["code"] == 400404


def test_plain_post_to_the_endpoint(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(1.0).read_bytes()
    session = _init(up, ws, len(data))
    _patch(session["endpoint"], 0, data[:500])
    response = httpx.post(session["endpoint"], content=data)
    assert response.status_code == 204
    assert wait_status(api, session["id"])["status"] == "done"
    assert httpx.post(session["endpoint"], content=data).status_code == 409


def test_non_media_ends_in_error_with_the_reason(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, receiver: Receiver
) -> None:
    emu_control.set_webhook(ws, receiver.url + "/hook")
    session = _init(up, ws, 11)
    httpx.post(session["endpoint"], content=b"hello world")
    assert wait_status(api, session["id"])["status"] == "error"
    events = wait_for(lambda: [e for e in receiver.events(session["id"]) if e["data"]["status"] == "error"])
    assert "not a playable video" in events[0]["message"]


def test_single_request_upload(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    clip = clip_factory(1.0)
    response = up.post(
        "/v2/video",
        content=clip.read_bytes(),
        headers=[
            (b"X-Parent-ID", to_base58(ws.folder_id).encode()),
            (b"X-Video-Title", "Caf\u00e9".encode("latin-1")),
            (b"X-Video-Description", b"d"),
            (b"X-File-Name", b"movie.mp4"),
            (b"Content-Type", b"video/mp4"),
        ],
    )
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"id", "project_id", "title", "status", "progress", "play_link"}
    assert (data["status"], data["progress"], data["title"], data["project_id"]) == (
        "uploading",
        0,
        "Caf\u00e9",
        ws.project_id,
    )
    video = wait_status(api, data["id"])
    assert video["status"] == "done" and video["folder_id"] == ws.folder_id and video["description"] == "d"
    assert video["assets"][0]["original_name"] == "movie.mp4"


def test_header_values_are_latin_1(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    utf8_title = "\u65e5\u672c".encode()
    response = up.post(
        "/v2/video",
        content=clip_factory(0.5).read_bytes(),
        headers=[(b"X-Parent-ID", ws.project_id.encode()), (b"X-Video-Title", utf8_title)],
    )
    assert response.status_code == 200
    assert response.json()["data"]["title"] == utf8_title.decode("latin-1")


def test_single_request_validation(up: httpx.Client, ws: Workspace) -> None:
    response = up.post("/v2/video", content=b"x")
    assert {p["name"] for p in _error(response)["invalid_params"]} == {"X-Parent-ID", "X-Video-Title"}
    trim = up.post(
        "/v2/video",
        content=b"x",
        headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "t", "X-Video-Trim": "{start"},
    )
    assert _error(trim)["invalid_params"][0]["name"] == "X-Video-Trim"
    assert (
        _error(up.post("/v2/video", content=b"x", headers={"X-Parent-ID": "zz", "X-Video-Title": "t"}))[
            "code"
        ]
        == 400301
    )
    ghost = up.post(
        "/v2/video", content=b"x", headers={"X-Parent-ID": str(uuid.uuid4()), "X-Video-Title": "t"}
    )
    assert _error(ghost)["code"] == 400236
    empty = up.post("/v2/video", content=b"", headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "t"})
    assert _error(empty)["code"] == 1
    replace_ghost = up.post(
        "/v2/video",
        content=b"x",
        headers={"X-Parent-ID": ws.project_id, "X-Video-Title": "t", "X-Replace-Video-ID": str(uuid.uuid4())},
    )
    assert _error(replace_ghost)["invalid_params"][0]["name"] == "X-Replace-Video-ID"
    assert up.get("/v2/video").status_code == 405


def test_repeated_post_creates_a_second_video(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    clip = clip_factory(0.5)
    first = upload_single(up, ws, clip, title="same", **{"Idempotency-Key": "k1"})
    second = upload_single(up, ws, clip, title="same", **{"Idempotency-Key": "k1"})
    assert first != second
    assert api.get("/v1/videos", params={"title": "same"}).json()["meta"]["pagination"]["total"] == 2


def test_trim_header(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    video_id = upload_single(up, ws, clip_factory(2.0), **{"X-Video-Trim": '{"start": 0.5, "length": 1}'})
    assert wait_status(api, video_id)["duration"] == pytest.approx(1.0, abs=0.1)
    to_end = upload_single(up, ws, clip_factory(2.0), **{"X-Video-Trim": '{"start": 1.5}'})
    assert wait_status(api, to_end)["duration"] == pytest.approx(0.5, abs=0.1)
    past = upload_single(up, ws, clip_factory(1.0), **{"X-Video-Trim": '{"start": 5}'})
    assert wait_status(api, past)["status"] == "error"


def test_replace_video_id(
    api: httpx.Client, up: httpx.Client, ws: Workspace, done_video: dict, clip_factory: Callable[..., Path]
) -> None:
    new_id = upload_single(up, ws, clip_factory(1.0), title="v2", **{"X-Replace-Video-ID": done_video["id"]})
    assert new_id == done_video["id"]
    video = wait_status(api, new_id)
    assert (video["version"], video["title"]) == (2, "v2")
    assert video["duration"] == pytest.approx(1.0, abs=0.1)
    assert api.get("/v1/videos").json()["meta"]["pagination"]["total"] == 1


def test_init_replace_and_attachment(
    api: httpx.Client, up: httpx.Client, done_video: dict, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(1.5).read_bytes()
    replace = up.post(
        "/v2/init", json={"type": "replace", "video_id": done_video["id"], "filesize": len(data)}
    )
    assert replace.json()["data"]["id"] == done_video["id"]
    assert _patch(replace.json()["data"]["endpoint"], 0, data).status_code == 204
    video = wait_for(
        lambda: (
            (v := api.get(f"/v1/videos/{done_video['id']}").json()["data"])["version"] == 2
            and v["status"] == "done"
            and v
        )
    )
    assert video["duration"] == pytest.approx(1.5, abs=0.1)
    attachment = up.post(
        "/v2/init",
        json={"type": "attachment", "video_id": done_video["id"], "filesize": 4, "filename": "notes.txt"},
    ).json()["data"]
    assert attachment["id"] != done_video["id"]
    assert httpx.post(attachment["endpoint"], content=b"abcd").status_code == 204
    materials = api.get(f"/v1/videos/{done_video['id']}").json()["data"]["additional_materials"]
    assert [(m["id"], m["original_name"], m["file_size"]) for m in materials] == [
        (attachment["id"], "notes.txt", 4)
    ]


def test_url_import(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    receiver: Receiver,
    emu_control: EmulatorControl,
    clip_factory: Callable[..., Path],
) -> None:
    receiver.files["/media/clip.mp4"] = clip_factory(1.0).read_bytes()
    emu_control.set_webhook(ws, receiver.url + "/hook")
    headers = {"X-Parent-ID": ws.project_id, "X-Video-Title": "from url"}
    ok = up.post("/v2/video", headers={**headers, "X-Video-URL": receiver.url + "/media/clip.mp4"})
    assert ok.status_code == 200 and ok.json()["data"]["status"] == "uploading"
    video = wait_status(api, ok.json()["data"]["id"])
    assert video["status"] == "done"
    assert video["assets"][0]["original_name"] == "clip.mp4"
    assert video["assets"][0]["file_size"] == len(receiver.files["/media/clip.mp4"])
    wait_for(
        lambda: (
            receiver.events(video["id"])[-1:]
            == [{"event": "media.update.status", "data": {"id": video["id"], "status": "done"}}]
        )
    )
    missing = up.post("/v2/video", headers={**headers, "X-Video-URL": receiver.url + "/media/none.mp4"})
    unreachable = up.post("/v2/video", headers={**headers, "X-Video-URL": "http://127.0.0.1:9/x.mp4"})
    for response, reason in ((missing, "HTTP 404"), (unreachable, "could not be fetched")):
        video_id = response.json()["data"]["id"]
        assert wait_status(api, video_id)["status"] == "error"
        events = wait_for(partial(_error_events, receiver, video_id))
        assert reason in events[0]["message"]
        assert set(events[0]) == {"event", "data", "message"}


def test_a_watch_page_given_as_video_url_ends_in_error(
    api: httpx.Client, up: httpx.Client, ws: Workspace, receiver: Receiver, emu_control: EmulatorControl
) -> None:
    page = b"<!DOCTYPE html><html><head><title>Watch</title></head><body>player</body></html>"
    receiver.files["/watch?v=abc"] = page
    receiver.types["/watch?v=abc"] = "text/html; charset=utf-8"
    receiver.files["/watch?v=untyped"] = b"\n  " + page  # a page served without its type
    receiver.types["/watch?v=untyped"] = "application/octet-stream"
    emu_control.set_webhook(ws, receiver.url + "/hook")
    for path in ("/watch?v=abc", "/watch?v=untyped"):
        url = receiver.url + path
        headers = {"X-Parent-ID": ws.project_id, "X-Video-Title": "watch page", "X-Video-URL": url}
        video_id = up.post("/v2/video", headers=headers).json()["data"]["id"]
        assert wait_status(api, video_id)["status"] == "error"
        events = wait_for(partial(_error_events, receiver, video_id))
        assert "web page, not a media file" in events[0]["message"]  # spec 3.1: the reason in the payload
        assert [e["data"]["status"] for e in receiver.events(video_id)] == ["uploading", "error"]
    bad_scheme = up.post("/v2/video", headers={**headers, "X-Video-URL": "ftp://x/y"})
    assert _error(bad_scheme)["invalid_params"][0]["name"] == "X-Video-URL"

"""tus interoperability with tuspy as an independent client: upload, and resume from HEAD after a stop."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import httpx
from tusclient.uploader import Uploader

from tests.emulator.conftest import wait_status
from videoferry.emulator.control import Workspace


def _init(up: httpx.Client, ws: Workspace, size: int) -> dict:
    body = {
        "type": "video",
        "parent_id": ws.project_id,
        "title": "tus",
        "filesize": size,
        "filename": "c.mp4",
    }
    return dict(up.post("/v2/init", json=body).json()["data"])


def test_tuspy_uploads_to_the_returned_endpoint(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(2.0).read_bytes()
    session = _init(up, ws, len(data))
    uploader = Uploader(url=session["endpoint"], file_stream=io.BytesIO(data), chunk_size=7000)
    uploader.upload()
    assert uploader.offset == len(data)
    video = wait_status(api, session["id"])
    assert video["status"] == "done"
    original = {a["quality"]: a for a in video["assets"]}["original"]
    assert original["file_size"] == len(data) and original["original_name"] == "c.mp4"


def test_tuspy_resumes_where_the_server_stopped(
    api: httpx.Client, up: httpx.Client, ws: Workspace, clip_factory: Callable[..., Path]
) -> None:
    data = clip_factory(1.0).read_bytes()
    session = _init(up, ws, len(data))
    first = Uploader(url=session["endpoint"], file_stream=io.BytesIO(data), chunk_size=4096)
    first.upload(stop_at=8192)
    assert httpx.head(session["endpoint"]).headers["upload-offset"] == "8192"
    assert api.get(f"/v1/videos/{session['id']}").json()["data"]["status"] == "uploading"
    second = Uploader(url=session["endpoint"], file_stream=io.BytesIO(data), chunk_size=4096)
    assert second.offset == 8192
    second.upload()
    assert wait_status(api, session["id"])["status"] == "done"

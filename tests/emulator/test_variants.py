"""Variants through raw HTTP: each changes what it says, and the default stays the emulator's own choice."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from emulator.control import EmulatorControl, Workspace
from emulator.ids import to_base58
from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status


def _init(up: httpx.Client, ws: Workspace, title: str, parent: str | None = None) -> dict[str, Any]:
    body = {"type": "video", "parent_id": parent or ws.project_id, "title": title, "filesize": 10}
    response = up.post("/v2/init", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


def _titles(api: httpx.Client, **params: Any) -> list[str]:
    response = api.get("/v1/videos", params=params)
    assert response.status_code == 200, response.text
    return [v["title"] for v in response.json()["data"]]


def test_unknown_and_conflicting_variants_are_refused(emu_control: EmulatorControl, ws: Workspace) -> None:
    for names in (["no-such-variant"], ["clock-ahead", "clock-behind"]):
        with pytest.raises(httpx.HTTPStatusError) as caught:
            emu_control.set_variants(ws, names)
        assert caught.value.response.json()["error"]["code"] == 400400
    assert emu_control.set_variants(ws, ["no-total"])["variants"] == ["no-total"]
    assert "ids-base58" in emu_control.variants()


def test_filters_ignored(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    _init(up, ws, "a")
    _init(up, ws, "b", ws.folder_id)
    assert _titles(api, title="a") == ["a"]
    assert _titles(api, folder_id=ws.folder_id) == ["b"]
    emu_control.set_variants(ws, ["ignore-title-filter", "ignore-parent-filter"])
    assert sorted(_titles(api, title="a")) == ["a", "b"]
    assert sorted(_titles(api, folder_id=ws.folder_id)) == ["a", "b"]


def test_pages_capped_and_total_missing(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    for n in range(12):
        _init(up, ws, f"v{n}")
    emu_control.set_variants(ws, ["page-cap-10", "no-total"])
    body = api.get("/v1/videos", params={"per_page": 100}).json()
    assert len(body["data"]) == 10
    assert body["meta"]["pagination"] == {"page": 1, "per_page": 10}


def test_list_lag(api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    emu_control.set_variants(ws, ["list-lag"], list_lag_seconds=1.0)
    made = _init(up, ws, "late")
    assert _titles(api) == []
    assert api.get(f"/v1/videos/{made['id']}").status_code == 200  # GET sees it at once
    wait_for(lambda: _titles(api) == ["late"], timeout=10)


@pytest.mark.parametrize(
    ("variant", "path", "refused", "works"),
    [
        ("update-put", "/v1/videos/{id}", "PATCH", "PUT"),
        ("chapters-post", "/v1/videos/{id}/chapters", "PUT", "POST"),
    ],
)
def test_the_other_method(
    variant: str,
    path: str,
    refused: str,
    works: str,
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
) -> None:
    made = _init(up, ws, "m")
    body = {"title": "x"} if variant == "update-put" else {"items": []}
    assert api.request(works, path.format(id=made["id"]), json=body).status_code == 405  # default: not this
    emu_control.set_variants(ws, [variant])
    answer = api.request(refused, path.format(id=made["id"]), json=body)
    assert answer.status_code == 405 and answer.json()["error"]["code"] == 400405
    assert api.request(works, path.format(id=made["id"]), json=body).status_code == 200


def test_video_put(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path) -> None:
    emu_control.set_variants(ws, ["video-put"])
    headers = {"X-Parent-ID": ws.project_id, "X-Video-Title": "put", "Content-Type": "video/mp4"}
    assert up.post("/v2/video", content=sample_clip.read_bytes(), headers=headers).status_code == 405
    assert up.put("/v2/video", content=sample_clip.read_bytes(), headers=headers).status_code == 200


def test_bodies_and_cut_making_a_new_video(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = wait_status(api, upload_single(up, ws, sample_clip, title="src"))
    emu_control.set_variants(ws, ["empty-bodies"])
    moved = api.post(f"/v1/videos/{video['id']}/move", json={"project_id": ws.project_id})
    assert moved.status_code == 200 and moved.content == b""
    emu_control.set_variants(ws, ["id-only-bodies", "cut-new-video"])
    cut = api.post(f"/v1/videos/{video['id']}/cut", json={"trim": [{"start": 0, "length": 0.5}]})
    assert cut.status_code == 200 and list(cut.json()["data"]) == ["id"]
    new_id = cut.json()["data"]["id"]
    assert new_id != video["id"]
    assert wait_status(api, new_id)["duration"] == pytest.approx(0.5, abs=0.1)
    assert api.get(f"/v1/videos/{video['id']}").json()["data"]["version"] == video["version"]


@pytest.mark.parametrize(("variant", "sign"), [("clock-ahead", 1), ("clock-behind", -1)])
def test_clock_and_whole_seconds(
    variant: str, sign: int, api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, [variant, "whole-seconds"], clock_offset_seconds=600)
    answer = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1}
    )
    now = datetime.now(UTC)
    date = parsedate_to_datetime(answer.headers["date"])
    assert abs((date - now).total_seconds() - sign * 600) <= 2
    created = api.get(f"/v1/videos/{answer.json()['data']['id']}").json()["data"]["created_at"]
    assert created.endswith("Z") and "." not in created
    when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    assert abs((when - now).total_seconds() - sign * 600) <= 2


def test_the_default_date_header_is_the_real_time(up: httpx.Client, ws: Workspace) -> None:
    answer = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1}
    )
    assert abs((parsedate_to_datetime(answer.headers["date"]) - datetime.now(UTC)).total_seconds()) <= 2
    assert len(answer.headers.get_list("date")) == 1


@pytest.mark.parametrize("variant", ["ids-undashed", "ids-upper", "ids-base58"])
def test_id_notations(
    variant: str, api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, [variant])
    made = _init(up, ws, "ids")
    expected = {
        "ids-undashed": made["id"].replace("-", ""),
        "ids-upper": made["id"].upper(),
        "ids-base58": made["id"],
    }
    real = [v for v in emu_control.videos(ws) if v["title"] == "ids"][0]["id"]
    want = {"ids-undashed": real.replace("-", ""), "ids-upper": real.upper(), "ids-base58": to_base58(real)}
    assert made["id"] == want[variant] == expected[variant]
    assert api.get(f"/v1/videos/{made['id']}").json()["data"]["project_id"] != ws.project_id


def test_no_original(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = wait_status(api, upload_single(up, ws, sample_clip, title="o"))
    assert "original" in [a["quality"] for a in video["assets"]]
    emu_control.set_variants(ws, ["no-original"])
    assets = api.get(f"/v1/videos/{video['id']}").json()["data"]["assets"]
    assert assets and "original" not in [a["quality"] for a in assets]


def test_headers_utf8(
    up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    headers = [(b"X-Parent-ID", ws.project_id.encode()), (b"X-Video-Title", "Café".encode("latin-1"))]
    first = up.post("/v2/video", content=sample_clip.read_bytes(), headers=headers)
    assert first.json()["data"]["title"] == "Café"
    emu_control.set_variants(ws, ["headers-utf8"])
    second = up.post("/v2/video", content=sample_clip.read_bytes(), headers=headers)
    assert second.json()["data"]["title"] == "Caf\ufffd"


def test_init_session_id(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, ["init-session-id"])
    made = _init(up, ws, "session")
    assert api.get(f"/v1/videos/{made['id']}").status_code == 404
    assert _titles(api, title="session") == ["session"]


def test_endpoint_expiry(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    emu_control.set_variants(ws, ["endpoint-expiry"], endpoint_ttl_seconds=0.3)
    endpoint = _init(up, ws, "expires")["endpoint"]
    assert httpx.head(endpoint, headers={"Tus-Resumable": "1.0.0"}).status_code == 200
    wait_for(lambda: httpx.head(endpoint, headers={"Tus-Resumable": "1.0.0"}).status_code == 404, timeout=10)


def test_tus_rate_limited(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    endpoint = _init(up, ws, "counted")["endpoint"]
    emu_control.set_limits(ws, rate_per_second=2, rate_per_minute=100)
    head = {"Tus-Resumable": "1.0.0"}
    assert {httpx.head(endpoint, headers=head).status_code for _ in range(5)} == {200}  # not counted
    emu_control.set_variants(ws, ["tus-rate-limited"])
    emu_control.set_limits(ws, rate_per_second=2, rate_per_minute=100)  # clears the token's history
    codes = [httpx.head(endpoint, headers=head).status_code for _ in range(5)]
    assert codes.count(200) == 2 and codes.count(429) == 3


def test_webhook_alt_shape(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    sample_clip: Path,
) -> None:
    emu_control.set_variants(ws, ["webhook-alt-shape"])
    emu_control.set_webhook(ws, receiver.url + "/hook")
    video_id = upload_single(up, ws, sample_clip, title="hook")
    wait_status(api, video_id)
    found = wait_for(
        lambda: [
            r["json"]
            for r in receiver.received
            if r["json"].get("object", {}).get("media_id") == video_id
            and r["json"]["object"]["status"] == "done"
        ]
    )
    assert found[0]["type"] == "media.update.status" and "sent_at" in found[0]

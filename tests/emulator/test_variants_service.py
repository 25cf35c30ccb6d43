"""Variants through raw HTTP (2/2): the clock, id notations, originals, upload headers, init ids, upload
addresses that expire or count against the rate limit, and the webhook shape."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.ids import to_base58, to_hex

TUS = {"Tus-Resumable": "1.0.0"}
NOTATIONS = {
    "default": re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"),
    "ids-undashed": re.compile(r"^[0-9a-f]{32}$"),
    "ids-upper": re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$"),
    "ids-base58": re.compile(r"^[0-9A-HJ-NP-Za-km-z]{22}$"),
}
WHOLE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
FRACTION = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$")


def _init(up: httpx.Client, ws: Workspace, title: str, filesize: int = 10) -> dict[str, Any]:
    body = {"type": "video", "parent_id": ws.project_id, "title": title, "filesize": filesize}
    response = up.post("/v2/init", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["data"])


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _skew(answer: httpx.Response) -> float:
    """Seconds the answer's only Date header is ahead of this machine's clock."""
    assert len(answer.headers.get_list("date")) == 1
    return (parsedate_to_datetime(answer.headers["date"]) - datetime.now(UTC)).total_seconds()


def _walk(value: Any, key: str | None = None) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    elif key is not None:
        yield key, value


def _ids(body: Any) -> list[str]:
    return [v for k, v in _walk(body) if (k == "id" or k.endswith("_id")) and isinstance(v, str)]


# ------------------------------------------------------------------------------------------------ clock


def test_the_default_clock(api: httpx.Client, up: httpx.Client, ws: Workspace) -> None:
    made = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1}
    )
    got = api.get(f"/v1/videos/{made.json()['data']['id']}")
    for answer in (made, got):
        assert abs(_skew(answer)) < 30
    created = got.json()["data"]["created_at"]
    assert FRACTION.match(created) and abs((_when(created) - datetime.now(UTC)).total_seconds()) < 30


@pytest.mark.parametrize(("variant", "sign"), [("clock-ahead", 1), ("clock-behind", -1)])
def test_the_service_clock(
    variant: str, sign: int, api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, [variant], clock_offset_seconds=600)
    made = up.post(
        "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": "t", "filesize": 1}
    )
    vid = made.json()["data"]["id"]
    updated = api.patch(f"/v1/videos/{vid}", json={"title": "u"})
    for answer in (made, updated, api.get("/v1/videos")):  # both hosts
        assert abs(_skew(answer) - sign * 600) < 30
    data = updated.json()["data"]
    for stamp in (data["created_at"], data["updated_at"]):
        assert FRACTION.match(stamp)
        assert abs((_when(stamp) - datetime.now(UTC)).total_seconds() - sign * 600) < 30
    real = [v for v in emu_control.videos(ws) if v["id"] == vid][0]["created_at"]  # the tests' view
    assert abs((_when(real) - datetime.now(UTC)).total_seconds()) < 30


def test_whole_seconds(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    vid = wait_status(api, upload_single(up, ws, sample_clip, title="w"))["id"]
    emu_control.set_variants(ws, ["whole-seconds"])
    data = api.patch(f"/v1/videos/{vid}", json={"title": "u"}).json()["data"]
    stamps = [v for k, v in _walk(data) if k.endswith("_at") and v is not None]
    assert len(stamps) >= 3 and all(WHOLE.match(s) for s in stamps)
    assert abs((_when(data["created_at"]) - datetime.now(UTC)).total_seconds()) < 30  # no clock offset
    assert abs(_skew(api.get("/v1/videos"))) < 30


# ------------------------------------------------------------------------------------------ identifiers


@pytest.mark.parametrize("variant", ["default", "ids-undashed", "ids-upper", "ids-base58"])
def test_id_notations(
    variant: str,
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    sample_clip: Path,
) -> None:
    canonical = wait_status(api, upload_single(up, ws, sample_clip, title="ids"))["id"]
    emu_control.set_webhook(ws, receiver.url + "/hook")
    if variant != "default":
        emu_control.set_variants(ws, [variant])
    pattern = NOTATIONS[variant]
    made = _init(up, ws, "new")
    video = api.get(f"/v1/videos/{canonical}").json()["data"]
    listed = api.get("/v1/videos").json()
    ids = _ids(made) + _ids(video) + _ids(listed)
    assert len(ids) > 10 and all(pattern.match(i) for i in ids), ids
    assert {"id", "project_id", "video_id", "storage_id"} <= {k for k, v in _walk(video) if v in ids}
    expected = {
        "default": canonical,
        "ids-undashed": to_hex(canonical),
        "ids-upper": canonical.upper(),
        "ids-base58": to_base58(canonical),
    }[variant]
    assert video["id"] == expected
    for notation in (canonical, to_hex(canonical), canonical.upper(), to_base58(canonical)):
        assert api.get(f"/v1/videos/{notation}").status_code == 200  # every notation is still accepted
    emu_control.set_video_status(ws, canonical, "error", "boom")
    hooks = wait_for(lambda: [r["json"] for r in receiver.received if r["json"]["data"]["status"] == "error"])
    assert hooks[0]["data"]["id"] == expected


# ------------------------------------------------------------------------------------------------ media


def test_no_original(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    vid = wait_status(api, upload_single(up, ws, sample_clip, title="o"))["id"]
    md5 = hashlib.md5(sample_clip.read_bytes()).hexdigest()

    def qualities() -> list[list[str]]:
        views = [
            api.get(f"/v1/videos/{vid}").json()["data"],
            api.get("/v1/videos").json()["data"][0],
            api.patch(f"/v1/videos/{vid}", json={"title": "p"}).json()["data"],
        ]
        return [[a["quality"] for a in view["assets"]] for view in views]

    def stored() -> tuple[int, str]:
        row = [v for v in emu_control.videos(ws) if v["id"] == vid][0]
        return row["file_size"], row["md5"]

    assert all("original" in q for q in qualities())
    assert stored() == (sample_clip.stat().st_size, md5)
    emu_control.set_variants(ws, ["no-original"])
    after = qualities()
    assert all(q and "original" not in q for q in after)
    assert stored() == (sample_clip.stat().st_size, md5)  # the tests' view still has the bytes


# ---------------------------------------------------------------------------------------------- uploads


def test_headers_utf8(
    up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    data = sample_clip.read_bytes()

    def title(raw: bytes) -> str:
        headers = [(b"X-Parent-ID", ws.project_id.encode()), (b"X-Video-Title", raw)]
        answer = up.post("/v2/video", content=data, headers=headers)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["data"]["title"])

    assert title("Café".encode()) == "CafÃ©"  # default: latin-1
    assert title("Café".encode("latin-1")) == "Café"
    emu_control.set_variants(ws, ["headers-utf8"])
    assert title("Café".encode()) == "Café"
    assert title("Café".encode("latin-1")) == "Caf\ufffd"


def test_init_session_id(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    made = _init(up, ws, "video-id")
    assert api.get(f"/v1/videos/{made['id']}").status_code == 200  # default: the video's id
    emu_control.set_variants(ws, ["init-session-id", "ids-base58"])
    session = _init(up, ws, "session")
    assert NOTATIONS["ids-base58"].match(session["id"])
    assert api.get(f"/v1/videos/{session['id']}").status_code == 404
    listed = api.get("/v1/videos", params={"title": "session"}).json()["data"]
    assert len(listed) == 1 and listed[0]["status"] == "pending" and listed[0]["id"] != session["id"]
    patched = httpx.patch(
        session["endpoint"],
        content=b"0123456789",
        headers={**TUS, "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"},
    )
    assert patched.status_code == 204
    wait_status(api, listed[0]["id"])  # the endpoint fills the listed video


def test_endpoint_expiry(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    lasting = _init(up, ws, "lasting")["endpoint"]
    other = emu_control.create_workspace(
        rate_per_second=100_000,
        rate_per_minute=1_000_000,
        variants=["endpoint-expiry"],
        endpoint_ttl_seconds=0.3,
    )
    with httpx.Client(base_url=other.upload_url, headers=other.headers, timeout=30) as up2:
        expiring = _init(up2, other, "expires")["endpoint"]
    wait_for(lambda: httpx.head(expiring, headers=TUS).status_code == 404, timeout=15)
    assert httpx.head(lasting, headers=TUS).status_code == 200  # default: the address lasts


def test_expired_address_keeps_the_video_and_its_bytes(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(ws, ["endpoint-expiry"], endpoint_ttl_seconds=3600)
    made = _init(up, ws, "half", filesize=10)
    patch = {**TUS, "Content-Type": "application/offset+octet-stream"}
    first = httpx.patch(made["endpoint"], content=b"01234", headers={**patch, "Upload-Offset": "0"})
    assert first.status_code == 204
    emu_control.set_variants(ws, ["endpoint-expiry"], endpoint_ttl_seconds=0)  # now older than the TTL
    assert httpx.head(made["endpoint"], headers=TUS).status_code == 404
    assert (
        httpx.patch(made["endpoint"], content=b"56789", headers={**patch, "Upload-Offset": "5"}).status_code
        == 404
    )
    assert httpx.post(made["endpoint"], content=b"0123456789", headers=TUS).status_code == 404
    video = api.get(f"/v1/videos/{made['id']}").json()["data"]
    assert video["status"] in ("uploading", "pending") and video["progress"] == pytest.approx(50.0)


def test_tus_rate_limited(up: httpx.Client, ws: Workspace, emu_control: EmulatorControl) -> None:
    endpoint = _init(up, ws, "counted")["endpoint"]
    upload_path = "/" + endpoint.split("/", 3)[3]

    def heads() -> list[int]:
        emu_control.set_limits(ws, rate_per_second=0, rate_per_minute=2)  # also clears the token's history
        return [httpx.head(endpoint, headers=TUS).status_code for _ in range(5)]

    def log() -> list[tuple[int, bool]]:
        rows = emu_control.requests(ws.workspace_id)
        return [(r["status"], r["api"]) for r in rows if r["path"] == upload_path]

    assert heads() == [200] * 5  # default: upload requests are not counted
    assert log() == [(200, False)] * 5
    emu_control.set_variants(ws, ["tus-rate-limited"])
    assert heads() == [200, 200, 429, 429, 429]
    refused = httpx.patch(endpoint, content=b"", headers={**TUS, "Upload-Offset": "0"})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == 100106
    assert log()[5:] == [(200, True)] * 2 + [(429, False)] * 4


# --------------------------------------------------------------------------------------------- webhooks


def test_webhook_alt_shape(
    up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, receiver: Receiver, sample_clip: Path
) -> None:
    emu_control.set_webhook(ws, receiver.url + "/hook")
    plain = upload_single(up, ws, sample_clip, title="plain")
    wait_for(lambda: [e for e in receiver.events(plain) if e["data"]["status"] == "done"])
    assert set(receiver.events(plain)[0]) == {"event", "data"}  # default shape
    emu_control.set_variants(ws, ["webhook-alt-shape", "ids-base58"])
    alt = upload_single(up, ws, sample_clip, title="alt")

    def about(status: str) -> list[dict[str, Any]]:
        return [
            r["json"]
            for r in receiver.received
            if r["json"].get("object", {}).get("media_id") == alt and r["json"]["object"]["status"] == status
        ]

    done = wait_for(lambda: about("done"))[0]
    assert set(done) == {"type", "object", "sent_at"} and done["type"] == "media.update.status"
    assert NOTATIONS["ids-base58"].match(alt) and FRACTION.match(done["sent_at"])
    assert "reason" not in done["object"]
    emu_control.set_video_status(ws, alt, "error", "boom")
    assert wait_for(lambda: about("error"))[0]["object"]["reason"] == "boom"

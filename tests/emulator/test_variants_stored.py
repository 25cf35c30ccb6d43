"""Variants (3/3): fields kept in another form (tidy-text, title-cap, tags-tidy, chapter-titles-trimmed),
the poll rule, delete by POST and the first code batch resetting privacy_share."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.emulator.conftest import Receiver, upload_single, wait_for, wait_status
from videoferry.emulator.control import EmulatorControl, Workspace

Video = dict[str, Any]
CAFE_DECOMPOSED = "  Cafe\u0301 \t Lecture   001\n"
CAFE_STORED = "Café Lecture 001"


def _init(up: httpx.Client, ws: Workspace, title: str, **extra: Any) -> str:
    body = {"type": "video", "parent_id": ws.project_id, "title": title, "filesize": 10, **extra}
    answer = up.post("/v2/init", json=body)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["data"]["id"])


def _titles(api: httpx.Client, title: str | None = None) -> list[str]:
    params = {"title": title} if title is not None else {}
    return [v["title"] for v in api.get("/v1/videos", params=params).json()["data"]]


def _get(api: httpx.Client, video_id: str) -> Video:
    return dict(api.get(f"/v1/videos/{video_id}").json()["data"])


# ------------------------------------------------------------------------------------------ stored forms


def test_tidy_text_on_every_write_that_stores_a_title_or_description(
    api: httpx.Client,
    up: httpx.Client,
    ws: Workspace,
    emu_control: EmulatorControl,
    receiver: Receiver,
    done_video: Video,
    clip_factory: Callable[..., Path],
) -> None:
    emu_control.set_variants(ws, ["tidy-text"])
    made = _init(up, ws, CAFE_DECOMPOSED, description=" one \t two\n\nthree ")
    video = _get(api, made)
    assert video["title"] == CAFE_STORED == unicodedata.normalize("NFC", video["title"])
    assert video["description"] == "one two three"
    assert _titles(api, CAFE_DECOMPOSED) == []  # the filter compares with the stored form
    assert _titles(api, CAFE_STORED) == [CAFE_STORED]
    headers = {"X-Video-Title": "Lecture  002\t part", "X-Video-Description": "a  b"}  # HTTP trims ends
    single = upload_single(up, ws, clip_factory(0.5), **headers)
    assert (_get(api, single)["title"], _get(api, single)["description"]) == ("Lecture 002 part", "a b")
    receiver.files["/clip.mp4"] = clip_factory(0.5).read_bytes()
    by_url = up.post(
        "/v2/video",
        headers={
            "X-Parent-ID": ws.project_id,
            "X-Video-Title": "from   url",
            "X-Video-URL": receiver.url + "/clip.mp4",
        },
    )
    assert by_url.json()["data"]["title"] == "from url"
    updated = api.patch(f"/v1/videos/{made}", json={"title": "  Renamed \t  once ", "description": "x  y"})
    assert (updated.json()["data"]["title"], updated.json()["data"]["description"]) == ("Renamed once", "x y")
    stamp = updated.json()["data"]["updated_at"]
    again = api.patch(f"/v1/videos/{made}", json={"title": "Renamed once  "}).json()["data"]
    assert again["updated_at"] == stamp  # the same stored form: nothing changed
    source = done_video["id"]
    emu_control.set_variants(ws, [])  # a title stored before the variant, then copied, cut and joined
    api.patch(f"/v1/videos/{source}", json={"title": " base  title ", "description": " d  d "})
    emu_control.set_variants(ws, ["tidy-text"])
    copied = api.post(f"/v1/videos/{source}/copy", json={}).json()["data"]
    assert (copied["title"], copied["description"]) == ("base title", "d d")
    joined = api.post(f"/v1/videos/{source}/concat", json={"append": [{"video_id": source}]}).json()["data"]
    assert joined["title"] == "base title"
    cut = api.post(
        f"/v1/videos/{source}/cut", json={"trim": [{"start": 0, "length": 1}], "title": " cut  it "}
    )
    assert cut.json()["data"]["title"] == "cut it"
    for video_id in (single, by_url.json()["data"]["id"]):
        assert wait_status(api, video_id)["status"] == "done"


def test_title_cap_after_tidying(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    answer = emu_control.set_variants(ws, ["title-cap"], title_cap=12)
    assert answer["title_cap"] == 12
    long_a, long_b = "Lecture 001 - part one", "Lecture 001 - part two"  # alike in their first 12
    first, second = _init(up, ws, long_a), _init(up, ws, long_b)
    assert _get(api, first)["title"] == _get(api, second)["title"] == "Lecture 001 "
    assert _titles(api, long_a) == [] and _titles(api, "Lecture 001 ") == ["Lecture 001 "] * 2
    single = upload_single(up, ws, sample_clip, title="A title of more than twelve")
    assert _get(api, single)["title"] == "A title of m"
    assert api.patch(f"/v1/videos/{first}", json={"title": "x" * 40}).json()["data"]["title"] == "x" * 12
    emu_control.set_variants(ws, ["title-cap", "tidy-text"])  # the default cap, after tidying
    spaced = _init(up, ws, "  " + "word  " * 40)
    assert _get(api, spaced)["title"] == ("word " * 40)[:128]
    with pytest.raises(httpx.HTTPStatusError):
        emu_control.set_variants(ws, ["title-cap"], title_cap=0)


def test_tags_tidy_and_chapter_titles_trimmed(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    emu_control.set_variants(ws, ["tags-tidy", "chapter-titles-trimmed"])
    tags = ["Variant", "test", "variant", "TEST", "Zoë"]
    assert api.patch(f"/v1/videos/{vid}", json={"tags": tags}).json()["data"]["tags"] == [
        "variant",
        "test",
        "zoë",
    ]
    items = [{"time": 0, "title": "  Start "}, {"time": 2500, "title": "\tNext  part\n"}]
    answer = api.put(f"/v1/videos/{vid}/chapters", json={"items": items}).json()["data"]
    assert [c["title"] for c in answer["items"]] == ["Start", "Next  part"]  # trimmed, not collapsed
    assert [c["title"] for c in _get(api, vid)["chapters"]["items"]] == ["Start", "Next  part"]
    listed = api.get("/v1/videos").json()["data"][0]["chapters"]["items"]
    assert [c["title"] for c in listed] == ["Start", "Next  part"]
    copy = api.post(f"/v1/videos/{vid}/copy", json={}).json()["data"]
    assert copy["tags"] == ["variant", "test", "zoë"] and copy["chapters"]["items"][0]["title"] == "Start"
    emu_control.set_variants(ws, [])
    assert api.patch(f"/v1/videos/{vid}", json={"tags": tags}).json()["data"]["tags"] == tags  # the default


# ------------------------------------------------------------------------------------------- poll rule


def test_poll_rule_429(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    emu_control.set_variants(ws, ["poll-rule-429"])
    first = api.get(f"/v1/videos/{vid}")
    assert first.status_code == 200 and "x-poll-rule-seconds" not in first.headers  # spec 8's 5 s: not stated
    refused = api.get(f"/v1/videos/{vid}")
    assert refused.status_code == 429 and refused.json() == {
        "error": {"code": 100106, "message": "too many requests"}
    }
    assert api.get("/v1/videos").status_code == 200  # a list is not a poll of the video
    assert api.patch(f"/v1/videos/{vid}", json={"title": "t"}).status_code == 200  # nor is a write
    emu_control.set_poll_rule(ws, 0.3)  # the workspace's own rule, stated in every answer
    copied = api.post(f"/v1/videos/{vid}/copy", json={})
    assert copied.headers["x-poll-rule-seconds"] == "0.3"
    other = copied.json()["data"]["id"]
    assert api.get(f"/v1/videos/{other}").status_code == 200  # per video
    assert api.get(f"/v1/videos/{other}").status_code == 429
    wait_for(lambda: api.get(f"/v1/videos/{other}").status_code == 200, timeout=10, interval=0.05)
    log = [e for e in emu_control.requests(ws.workspace_id) if e["status"] == 429]
    assert log and not any(e["api"] for e in log)  # refused polls are not counted by the rate limit


# ----------------------------------------------------------------------------------------- delete method


def test_delete_post(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    other = api.post(f"/v1/videos/{vid}/copy", json={}).json()["data"]["id"]
    refused = api.post(f"/v1/videos/{vid}")
    assert refused.status_code == 405 and refused.json()["error"]["code"] == 400405  # the default: DELETE
    emu_control.set_variants(ws, ["delete-post"])
    refused = api.delete(f"/v1/videos/{vid}")
    assert refused.status_code == 405 and refused.json()["error"]["code"] == 400405
    assert api.get(f"/v1/videos/{vid}").status_code == 200  # the refusal did nothing
    assert api.post(f"/v1/videos/{vid}").json() == {"data": {"success": True}}
    assert api.get(f"/v1/videos/{vid}").status_code == 404
    assert api.patch(f"/v1/videos/{other}", json={"title": "still patched"}).status_code == 200
    emu_control.set_variants(ws, ["delete-post", "update-put"])  # two hidden methods on one path
    assert api.put(f"/v1/videos/{other}", json={"title": "put"}).json()["data"]["title"] == "put"
    assert api.post(f"/v1/videos/{other}").status_code == 200
    assert (
        httpx.post(f"{ws.base_url}/v1/videos/{other}").json()["error"]["code"] == 100101
    )  # routed: auth first


# ------------------------------------------------------------------------------------- unique codes


@pytest.mark.parametrize(("variants", "after_first"), [([], {"password": "pw"}), (["codes-reset-share"], {})])
def test_the_first_batch_and_privacy_share(
    api: httpx.Client, ws: Workspace, emu_control: EmulatorControl, variants: list[str], after_first: dict
) -> None:
    emu_control.set_variants(ws, variants)
    body = {"name": "show", "type": "recurring", "privacy_share": {"password": "pw"}}
    event_id = api.post("/v2/live/events", json=body).json()["data"]["id"]
    batch = {"name": "first", "codes_amount": 2}
    assert api.post(f"/v2/live/events/{event_id}/unique-codes", json=batch).status_code == 201
    event = api.get(f"/v2/live/events/{event_id}").json()["data"]
    assert event["unique_codes_enabled"] is True and event["privacy_share"] == after_first
    api.put(f"/v2/live/events/{event_id}", json={"privacy_share": {"password": "again"}})
    assert (
        api.post(f"/v2/live/events/{event_id}/unique-codes", json={**batch, "name": "second"}).status_code
        == 201
    )
    event = api.get(f"/v2/live/events/{event_id}").json()["data"]
    assert event["privacy_share"] == {"password": "again"}  # only the first batch resets it


# -------------------------------------------------------------------------------- material download links


def _attach(up: httpx.Client, video_id: str, name: str, data: bytes) -> str:
    body = {"type": "attachment", "video_id": video_id, "filesize": len(data), "filename": name}
    answer = up.post("/v2/init", json=body).json()["data"]
    assert httpx.post(answer["endpoint"], content=data).status_code == 204
    return str(answer["id"])


def test_materials_downloadable_serves_each_materials_bytes_at_a_signed_link(
    api: httpx.Client, up: httpx.Client, ws: Workspace, emu_control: EmulatorControl, done_video: Video
) -> None:
    vid = done_video["id"]
    ids = {_attach(up, vid, "slides.pdf", b"%PDF-1.4 slides"): b"%PDF-1.4 slides"}
    ids[_attach(up, vid, "handout.txt", b"handout\n")] = b"handout\n"
    assert {m["download_link"] for m in _get(api, vid)["additional_materials"]} == {""}  # the default
    emu_control.set_variants(ws, ["materials-downloadable"])
    for view in (_get(api, vid), api.get("/v1/videos").json()["data"][0]):
        shown = {m["id"]: m["download_link"] for m in view["additional_materials"]}
        assert set(shown) == set(ids)
        for material_id, link in shown.items():
            assert "sig=" in link
            got = httpx.get(link)  # no token: the signature is the permission
            assert got.status_code == 200 and got.content == ids[material_id]
    link = next(iter(shown.values()))
    assert httpx.get(link.split("?")[0] + "?sig=0000").status_code == 404  # a wrong signature
    emu_control.set_variants(ws, [])
    assert httpx.get(link).status_code == 404  # not served without the variant

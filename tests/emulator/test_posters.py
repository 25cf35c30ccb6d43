"""Posters: POST /v2/poster on the upload host fetches X-Poster-URL and changes the event's poster links."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.emulator.conftest import Receiver

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture()
def event(api: httpx.Client) -> dict:
    return dict(api.post("/v2/live/events", json={"name": "show", "type": "one-time"}).json()["data"])


def test_poster_links_change(api: httpx.Client, up: httpx.Client, event: dict, receiver: Receiver) -> None:
    receiver.files["/poster.png"] = PNG
    answer = up.post(
        "/v2/poster", headers={"X-Event-ID": event["id"], "X-Poster-URL": f"{receiver.url}/poster.png"}
    )
    assert answer.status_code == 200, answer.text
    poster = answer.json()["data"]
    assert poster["media_id"] == event["id"] and poster["type"] == "image"
    after = api.get(f"/v2/live/events/{event['id']}").json()["data"]["poster"]
    assert after == poster
    for size in ("original", "md", "sm", "xs"):
        assert after[size] != event["poster"][size]
        assert after[size].endswith(".png")


@pytest.mark.parametrize(
    ("headers", "name"),
    [
        ({"X-Poster-URL": "http://127.0.0.1:9/p.png"}, "X-Event-ID"),
        ({"X-Event-ID": "EVENT"}, "X-Poster-URL"),
        ({"X-Event-ID": "EVENT", "X-Poster-URL": "ftp://127.0.0.1/p.png"}, "X-Poster-URL"),
        ({"X-Event-ID": "EVENT", "X-Poster-URL": "http://127.0.0.1:9/p.png"}, "X-Poster-URL"),
    ],
)
def test_poster_errors(up: httpx.Client, event: dict, headers: dict[str, str], name: str) -> None:
    sent = {k: v.replace("EVENT", event["id"]) for k, v in headers.items()}
    answer = up.post("/v2/poster", headers=sent)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == 400400
    assert error["invalid_params"][0]["name"] == name


def test_not_an_image_missing_file_and_missing_event(
    up: httpx.Client, event: dict, receiver: Receiver
) -> None:
    receiver.files["/page.html"] = b"<html></html>"
    for path in ("/page.html", "/missing.png"):
        answer = up.post(
            "/v2/poster", headers={"X-Event-ID": event["id"], "X-Poster-URL": receiver.url + path}
        )
        assert answer.json()["error"]["invalid_params"][0]["name"] == "X-Poster-URL"
    receiver.files["/p.png"] = PNG
    answer = up.post(
        "/v2/poster", headers={"X-Event-ID": str(uuid.uuid4()), "X-Poster-URL": receiver.url + "/p.png"}
    )
    assert answer.json()["error"]["invalid_params"][0]["name"] == "X-Event-ID"
    assert up.get("/v2/poster").status_code == 405

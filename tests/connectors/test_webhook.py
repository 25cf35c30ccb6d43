"""Webhook receiver: real HTTP on loopback, with and without HTTP Basic."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from videoferry.connectors.ids import to_base58
from videoferry.connectors.webhook import WebhookReceiver

Event = tuple[str, str, "str | None"]


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = threading.Lock()

    def __call__(self, video_id: str, status: str, message: str | None) -> None:
        with self.lock:
            self.events.append((video_id, status, message))


@pytest.fixture()
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture()
def open_receiver(recorder: Recorder) -> Iterator[WebhookReceiver]:
    with WebhookReceiver("127.0.0.1", 0, on_event=recorder) as receiver:
        yield receiver


@pytest.fixture()
def basic_receiver(recorder: Recorder) -> Iterator[WebhookReceiver]:
    with WebhookReceiver(
        "127.0.0.1", 0, username="hook", password="s3cr3t-pw", on_event=recorder
    ) as receiver:
        yield receiver


def status_event(video_id: str, status: str, message: str | None = None) -> dict:
    body: dict = {"event": "media.update.status", "data": {"id": video_id, "status": status}}
    if message is not None:
        body["message"] = message
    return body


def test_status_events_reach_the_callback(open_receiver: WebhookReceiver, recorder: Recorder) -> None:
    assert open_receiver.url == f"http://127.0.0.1:{open_receiver.port}/"
    assert open_receiver.port != 0
    r1 = httpx.post(open_receiver.url, json=status_event("vid-1", "processing"))
    r2 = httpx.post(open_receiver.url + "hooks/any", json=status_event("vid-2", "error", "file unreachable"))
    assert (r1.status_code, r2.status_code) == (200, 200)
    assert recorder.events == [("vid-1", "processing", None), ("vid-2", "error", "file unreachable")]
    assert open_receiver.received == 2


def test_other_events_are_answered_200_and_counted(recorder: Recorder) -> None:
    shapes: list[str] = []
    with WebhookReceiver(on_event=recorder, on_invalid=shapes.append) as receiver:
        resp = httpx.post(receiver.url, json={"event": "speak.call.started", "data": {"id": "c1"}})
        assert resp.status_code == 200
        assert recorder.events == []
        assert (receiver.ignored, receiver.invalid_events, receiver.valid_events) == (1, 1, 0)
    assert shapes == ["another event type; keys: data{id}, event"]


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b'{"event": "media.update.status"}',
        b'{"event": "media.update.status", "data": {"id": "v"}}',
        b'{"event": "media.update.status", "data": {"id": 5, "status": "done"}}',
        b"\xff\xfe",
    ],
)
def test_malformed_bodies_are_answered_200_and_counted(
    open_receiver: WebhookReceiver, recorder: Recorder, body: bytes
) -> None:
    resp = httpx.post(open_receiver.url, content=body, headers={"Content-Type": "application/json"})
    assert resp.status_code == 200  # refused, the sender would only send it again
    assert recorder.events == []
    assert (open_receiver.invalid_events, open_receiver.valid_events) == (1, 0)


def test_only_post_is_served(open_receiver: WebhookReceiver) -> None:
    assert httpx.get(open_receiver.url).status_code == 405


def test_a_failing_callback_answers_500(recorder: Recorder) -> None:
    def boom(video_id: str, status: str, message: str | None) -> None:
        raise RuntimeError("handler bug")

    with WebhookReceiver(on_event=boom) as receiver:
        assert httpx.post(receiver.url, json=status_event("v", "done")).status_code == 500


def test_basic_auth_is_enforced(
    basic_receiver: WebhookReceiver, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="videoferry.connectors.webhook")
    url = basic_receiver.url
    missing = httpx.post(url, json=status_event("v1", "done"))
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Basic")
    wrong = httpx.post(url, json=status_event("v1", "done"), auth=("hook", "wrong"))
    assert wrong.status_code == 401
    bearer = httpx.post(url, json=status_event("v1", "done"), headers={"Authorization": "Bearer s3cr3t-pw"})
    assert bearer.status_code == 401
    assert recorder.events == []

    ok = httpx.post(url, json=status_event("v1", "done"), auth=("hook", "s3cr3t-pw"))
    assert ok.status_code == 200
    assert recorder.events == [("v1", "done", None)]
    assert "s3cr3t-pw" not in caplog.text
    assert "aG9vazpzM2NyM3QtcHc" not in caplog.text  # base64 of hook:s3cr3t-pw
    assert "s3cr3t" not in repr(basic_receiver)


def test_concurrent_deliveries_are_all_recorded(open_receiver: WebhookReceiver, recorder: Recorder) -> None:
    def send(i: int) -> int:
        return httpx.post(open_receiver.url, json=status_event(f"v{i}", "done")).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(send, range(40)))
    assert codes == [200] * 40
    assert sorted(e[0] for e in recorder.events) == sorted(f"v{i}" for i in range(40))


def test_stop_closes_the_socket(recorder: Recorder) -> None:
    receiver = WebhookReceiver(on_event=recorder)
    receiver.start()
    url = receiver.url
    assert httpx.post(url, json=status_event("v", "done")).status_code == 200
    receiver.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.post(url, json=status_event("v", "done"), timeout=2)


@pytest.mark.parametrize(
    "payload",
    [
        {
            "type": "media.update.status",
            "object": {"media_id": "V1", "status": "error", "reason": "bad file"},
        },
        {"media_id": "V1", "status": "error", "reason": "bad file"},
        {"video_id": "V1", "status": "error", "message": "bad file"},
    ],
)
def test_other_plausible_shapes_are_understood(
    open_receiver: WebhookReceiver, recorder: Recorder, payload: dict[str, object]
) -> None:
    assert httpx.post(open_receiver.url, json=payload).status_code == 200
    assert recorder.events == [("V1", "error", "bad file")]
    assert open_receiver.valid_events == 1 and open_receiver.invalid_events == 0


def test_an_unknown_shape_is_counted_and_described_by_its_keys_only() -> None:
    shapes: list[str] = []
    with WebhookReceiver(on_event=lambda *a: None, on_invalid=shapes.append) as receiver:
        payload = {"event": "media.update.status", "payload": {"uuid": "secret-value", "state": "done"}}
        assert httpx.post(receiver.url, json=payload).status_code == 200
        assert receiver.invalid_events == 1 and receiver.valid_events == 0
    assert shapes == ["keys: event, payload{state, uuid}"]
    assert "secret-value" not in shapes[0]


@pytest.mark.parametrize(
    "notation",
    [
        "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0",
        "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    ],
)
def test_ids_of_every_notation_arrive_in_one_form(
    open_receiver: WebhookReceiver, recorder: Recorder, notation: str
) -> None:
    for value in (notation, to_base58(notation)):
        body = {"type": "media.update.status", "object": {"media_id": value, "status": "done"}}
        assert httpx.post(open_receiver.url, json=body).status_code == 200
    assert recorder.events == [("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "done", None)] * 2
    assert open_receiver.duplicates == 1  # the second, in another notation, is the same claim again

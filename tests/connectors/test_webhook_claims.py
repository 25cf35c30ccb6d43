"""Webhooks are claims: queued for the caller to confirm, duplicates counted, credentials beyond loopback."""

from __future__ import annotations

import base64
import threading
from datetime import UTC, datetime

import httpx
import pytest

from videoferry.connectors.config import ConfigError
from videoferry.connectors.webhook import (
    PASSWORD_ENV,
    USERNAME_ENV,
    WebhookConfigError,
    WebhookReceiver,
    is_loopback,
    parse_listen,
)

VIDEO = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


def emulator_shape(video_id: str, status: str, message: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"event": "media.update.status", "data": {"id": video_id, "status": status}}
    if message is not None:
        body["message"] = message
    return body


def test_events_become_claims_to_drain() -> None:
    with WebhookReceiver() as receiver:
        before = datetime.now(UTC)
        assert httpx.post(receiver.url, json=emulator_shape(VIDEO, "processing")).status_code == 200
        other = {
            "type": "media.update.status",
            "object": {"media_id": "V2", "status": "error", "reason": "bad"},
        }
        assert httpx.post(receiver.url, json=other).status_code == 200
        after = datetime.now(UTC)
        claims = receiver.drain()
    assert [(c.video_id, c.status, c.reason) for c in claims] == [
        (VIDEO, "processing", None),
        ("V2", "error", "bad"),
    ]
    assert all(before <= c.received_at <= after for c in claims)
    assert receiver.drain() == [], "a drain takes each claim once"


def test_duplicates_are_counted_and_queued_once() -> None:
    with WebhookReceiver() as receiver:
        for status in ("done", "done", "processing", "done", "error"):
            assert httpx.post(receiver.url, json=emulator_shape(VIDEO, status)).status_code == 200
        claims = receiver.drain()
        assert [c.status for c in claims] == ["done", "processing", "error"]  # as they came, out of order too
        assert (receiver.received, receiver.duplicates) == (5, 2)
        # Once drained, the same claim is queued again: the first may have been forged or early.
        assert httpx.post(receiver.url, json=emulator_shape(VIDEO, "done")).status_code == 200
        assert [c.status for c in receiver.drain()] == ["done"]
        assert receiver.duplicates == 3


def test_each_queued_claim_calls_on_claim_after_it_can_be_drained() -> None:
    drained: list[list[str]] = []
    with WebhookReceiver() as receiver:
        receiver.on_claim = lambda: drained.append([c.status for c in receiver.drain()])
        for status in ("done", "done", "error"):
            assert httpx.post(receiver.url, json=emulator_shape(VIDEO, status)).status_code == 200
    # Each claim was drainable when its call came; the second "done" came after the first was drained, so it
    # was queued (and announced) again.
    assert drained == [["done"], ["done"], ["error"]]


def test_a_claim_equal_to_one_still_waiting_is_not_announced_again() -> None:
    calls: list[int] = []
    with WebhookReceiver() as receiver:
        receiver.on_claim = lambda: calls.append(1)
        for _ in range(3):
            assert httpx.post(receiver.url, json=emulator_shape(VIDEO, "done")).status_code == 200
        assert len(receiver.drain()) == 1
    assert calls == [1]


def test_a_failing_on_claim_still_answers_200_and_keeps_the_claim() -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    with WebhookReceiver() as receiver:
        receiver.on_claim = broken
        assert httpx.post(receiver.url, json=emulator_shape(VIDEO, "done")).status_code == 200
        assert [c.status for c in receiver.drain()] == ["done"]


def test_drain_waits_for_the_first_claim_and_takes_a_limit() -> None:
    with WebhookReceiver() as receiver:
        assert receiver.drain(timeout=0.05) == []
        sender = threading.Thread(
            target=lambda: httpx.post(receiver.url, json=emulator_shape(VIDEO, "done")), daemon=True
        )
        sender.start()
        claims = receiver.drain(timeout=30)  # returns as the claim arrives
        sender.join(timeout=30)
        assert [c.status for c in claims] == ["done"]
        for i in range(3):
            httpx.post(receiver.url, json=emulator_shape(f"v{i}", "done"))
        assert [c.video_id for c in receiver.drain(limit=2)] == ["v0", "v1"]
        assert [c.video_id for c in receiver.drain()] == ["v2"]


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "192.168.1.5", "10.0.0.1", "example.com", "hooks.local"]
)
def test_beyond_loopback_without_credentials_is_refused(host: str) -> None:
    with pytest.raises(WebhookConfigError) as caught:
        WebhookReceiver(host, 0)
    message = str(caught.value)
    assert "--webhook-listen" in message and USERNAME_ENV in message and PASSWORD_ENV in message
    assert isinstance(caught.value, ConfigError), "the jobs turn a ConfigError into exit 2"
    assert not is_loopback(host)
    WebhookReceiver(host, 0, username="hook", password="pw")  # with credentials it may (not started here)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_needs_no_credentials(host: str) -> None:
    assert is_loopback(host)
    WebhookReceiver(host, 0)


def test_half_given_credentials_are_refused() -> None:
    for username, password in (("hook", None), (None, "pw"), ("hook", "")):
        with pytest.raises(WebhookConfigError, match=PASSWORD_ENV):
            WebhookReceiver("127.0.0.1", 0, username=username, password=password)


def test_from_listen_reads_the_variables() -> None:
    with pytest.raises(WebhookConfigError, match="--webhook-listen 0.0.0.0"):
        WebhookReceiver.from_listen("0.0.0.0:8099", env={})
    receiver = WebhookReceiver.from_listen("0.0.0.0:8099", env={USERNAME_ENV: "hook", PASSWORD_ENV: "pw"})
    assert (receiver.host, receiver.port) == ("0.0.0.0", 8099) and "basic" in repr(receiver)
    assert parse_listen(":0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:8099") == ("::1", 8099)
    for bad in ("8099", "host:port", "127.0.0.1:70000", ""):
        with pytest.raises(WebhookConfigError, match="HOST:PORT"):
            parse_listen(bad)
    with WebhookReceiver.from_listen("127.0.0.1:0", env={USERNAME_ENV: "hook", PASSWORD_ENV: "pw"}) as live:
        assert httpx.post(live.url, json=emulator_shape(VIDEO, "done")).status_code == 401
        assert (
            httpx.post(live.url, json=emulator_shape(VIDEO, "done"), auth=("hook", "pw")).status_code == 200
        )


def test_forged_posts_get_401_and_leave_no_claim() -> None:
    with WebhookReceiver(username="hook", password="s3cr3t-pw") as receiver:
        forged = [
            {},
            {"Authorization": "Basic " + base64.b64encode(b"hook:wrong").decode()},
            {"Authorization": "Basic " + base64.b64encode(b"other:s3cr3t-pw").decode()},
            {"Authorization": "Basic " + base64.b64encode(b"hook:s3cr3t-pw-and-more").decode()},
            {"Authorization": "Basic not-base64!!"},
            {"Authorization": "Basic " + base64.b64encode(b"hooks3cr3t-pw").decode()},
            {"Authorization": "Digest " + base64.b64encode(b"hook:s3cr3t-pw").decode()},
        ]
        for headers in forged:
            answer = httpx.post(receiver.url, json=emulator_shape(VIDEO, "done"), headers=headers)
            assert answer.status_code == 401, headers
        assert receiver.drain() == [] and receiver.unauthorised == len(forged)
        good = httpx.post(receiver.url, json=emulator_shape(VIDEO, "done"), auth=("hook", "s3cr3t-pw"))
        assert good.status_code == 200
        assert [c.status for c in receiver.drain()] == ["done"]


def test_an_ipv6_loopback_receiver() -> None:
    try:
        receiver = WebhookReceiver("::1", 0)
        receiver.start()
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    try:
        assert receiver.url.startswith("http://[::1]:")
        assert httpx.post(receiver.url, json=emulator_shape(VIDEO, "done")).status_code == 200
        assert [c.video_id for c in receiver.drain()] == [VIDEO]
    finally:
        receiver.stop()

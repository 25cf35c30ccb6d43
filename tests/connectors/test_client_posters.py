"""Posters against the emulator: /v2/poster on the upload host, refusals naming the header, secrecy."""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.live_events import LiveEvents
from videoferry.connectors.client.posters import Posters
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.ids import to_base58
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
SIGNATURE = "sig0f7c2e1d9b8a-never-seen"


@pytest.fixture()
def images() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A loopback image server: path -> bytes (the query string is ignored); others are 404."""
    files: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            data = files.get(self.path.split("?", 1)[0])
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


@pytest.fixture()
def transport(ws: Workspace) -> Iterator[Transport]:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    transport = Transport(ws.base_url, ws.upload_url, ws.token, limiter=limiter, retry=FAST)
    yield transport
    transport.close()


def test_upload_changes_the_event_poster(transport: Transport, images: tuple[str, dict[str, bytes]]) -> None:
    base, files = images
    files["/a.png"], files["/b.jpg"] = PNG, JPEG
    events, posters = LiveEvents(transport), Posters(transport)
    event = events.create("show", "one-time")
    assert event.poster is not None and event.poster.original
    poster = posters.upload(to_base58(event.id), f"{base}/a.png")
    assert poster.media_id == event.id and poster.type == "image" and poster.status == "done"
    assert poster.original and poster.original.endswith(".png") and poster.original != event.poster.original
    assert events.get(event.id).poster == poster
    again = posters.upload(event.id, f"{base}/b.jpg?{SIGNATURE}")
    assert again.id != poster.id and again.xs and again.xs.endswith(".jpg")


def test_refusals_name_the_header(transport: Transport, images: tuple[str, dict[str, bytes]]) -> None:
    base, files = images
    files["/page.html"] = b"<html></html>"
    posters = Posters(transport)
    event_id = LiveEvents(transport).create("show", "one-time").id
    for url in (
        f"{base}/missing.png",
        f"{base}/page.html",
        "ftp://127.0.0.1/p.png",
        "http://127.0.0.1:9/p.png",
    ):
        with pytest.raises(E.ValidationError) as refused:
            posters.upload(event_id, url)
        assert [p["name"] for p in refused.value.invalid_params] == ["X-Poster-URL"], url
    with pytest.raises(E.ValidationError) as unknown:
        posters.upload("00000000-0000-4000-8000-000000000000", f"{base}/missing.png")
    assert [p["name"] for p in unknown.value.invalid_params] == ["X-Event-ID"]
    with pytest.raises(ValueError):
        posters.upload(event_id, "  ")
    with pytest.raises(ValueError):
        posters.upload("", f"{base}/a.png")


def test_a_non_ascii_address_is_sent_encoded(
    transport: Transport, images: tuple[str, dict[str, bytes]]
) -> None:
    base, files = images
    files["/%C3%A9t%C3%A9.png"] = PNG
    event_id = LiveEvents(transport).create("show", "one-time").id
    poster = Posters(transport).upload(event_id, f"{base}/été.png")
    assert poster.original and poster.original.endswith(".png")


def test_the_signed_address_stays_out_of_logs_and_errors(
    transport: Transport, images: tuple[str, dict[str, bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    base, files = images
    files["/s.png"] = PNG
    caplog.set_level(logging.DEBUG)
    posters = Posters(transport)
    event_id = LiveEvents(transport).create("show", "one-time").id
    texts = [repr(posters.upload(event_id, f"{base}/s.png?X-Amz-Signature={SIGNATURE}"))]
    with pytest.raises(E.ValidationError) as refused:
        posters.upload(event_id, f"{base}/gone.png?X-Amz-Signature={SIGNATURE}")
    exc = refused.value
    texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc)), str(exc.invalid_params)]
    ours = [r for r in caplog.records if not r.name.startswith(("videoferry.emulator", "uvicorn"))]
    assert any("/v2/poster" in r.getMessage() for r in ours)
    texts += [f"{r.name} {r.getMessage()}" for r in ours]
    assert SIGNATURE not in "\n".join(texts)

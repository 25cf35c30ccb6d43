"""The download link reader on a real loopback HTTP server: size and md5 over many chunks, errors."""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from videoferry.connectors.download import Downloader, DownloadError

BODY = os.urandom(3 * 1024 * 1024 + 17)  # chunks of 64 KiB: 49 of them, the last one short


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if self.path != "/media/clip.mp4":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def test_fetch_streams_every_chunk_in_order_with_the_size_and_md5_of_the_body(server: str) -> None:
    downloader = Downloader(server, chunk_size=64 * 1024)
    got: list[bytes] = []
    try:
        result = downloader.fetch("/media/clip.mp4", got.append)
    finally:
        downloader.close()
    assert len(got) == 49 and b"".join(got) == BODY
    assert result.size == len(BODY)
    assert result.md5 == hashlib.md5(BODY, usedforsecurity=False).hexdigest()


def test_a_failing_sink_stops_the_download_and_its_error_is_raised(server: str) -> None:
    downloader = Downloader(server, chunk_size=64 * 1024)
    seen: list[int] = []

    def sink(chunk: bytes) -> None:
        seen.append(len(chunk))
        if len(seen) == 3:
            raise OSError("disk full")

    try:
        with pytest.raises(OSError, match="disk full"):
            downloader.fetch("/media/clip.mp4", sink)
        with pytest.raises(DownloadError) as missing:
            downloader.fetch("/media/gone.mp4", sink)
    finally:
        downloader.close()
    assert len(seen) == 3
    assert missing.value.status == 404 and not missing.value.retryable
    assert "gone" not in str(missing.value)  # the link is in no message

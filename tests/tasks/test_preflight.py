"""The preflight under a service that checks the token before its routes (the spec does not say which comes
first; the emulator routes first): a base URL with /v1 appended is still a configuration error naming it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from videoferry.connectors.client.probe import ServiceRouteError
from videoferry.connectors.config import Settings
from videoferry.flows.job import Exit, exit_for
from videoferry.tasks.preflight import check_reachable, check_token


class _AuthFirst(BaseHTTPRequestHandler):
    """Every path: 400 / 100101 without a token (the spec's missing Authorization header), 404 / 400404 with
    one (no route /v1/v1/videos): what a service that authenticates before routing answers."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.headers.get("Authorization"):
            status, code, message = 404, 400404, "route not found"
        else:
            status, code, message = 400, 100101, "authorization header not found"
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # quiet
        return


@pytest.fixture()
def auth_first() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AuthFirst)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_404_to_the_token_check_names_the_api_address(auth_first: str, tmp_path: Path) -> None:
    settings = Settings(api_url=f"{auth_first}/v1", upload_url=auth_first, token="tok-secret-4242")
    check_reachable(settings)  # without the token both answer 400: the probe cannot tell
    with pytest.raises(ServiceRouteError) as caught:
        check_token(settings, tmp_path / "ledger.db")
    said = str(caught.value)
    assert f"the API address {auth_first}/v1 has no route /v1/videos" in said, said
    assert f"give the base URL, without /v1 ({auth_first})" in said and "VIDEOFERRY_API_URL" in said
    assert "tok-secret-4242" not in said
    assert (exit_for(caught.value) or (None,))[0] == Exit.CONFIG
    assert not (tmp_path / "ledger.db").exists()

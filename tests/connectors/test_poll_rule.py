"""The service's poll rule in the client: the spec's 5 s unless the service states another; jobs' polls."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from videoferry.connectors.client import VideoClient
from videoferry.connectors.client.emulated import is_loopback
from videoferry.connectors.client.poll_pacing import POLL_RULE_HEADER, PollRule
from videoferry.connectors.config import POLL_RULE_SECONDS, ConfigError
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.sources import LocalFileSource
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.migrate.options import MigrateOptions


def test_a_stated_rule_is_taken_within_bounds() -> None:
    rule = PollRule()
    assert rule.seconds == POLL_RULE_SECONDS == 5.0
    for stated in (None, "", "soon", "nan", "inf", "-1", "0", "0.01", "86400", "3600", "61"):
        rule.learn(stated)
        assert rule.seconds == 5.0, stated  # nothing a service cannot mean moves the rule
    rule.learn("0.3")
    assert rule.seconds == 0.3
    rule.learn("12")
    assert rule.seconds == 12.0  # a service that asks for fewer polls gets them


def test_a_jobs_poll_interval_under_the_rule() -> None:
    rule = PollRule()
    assert rule.interval_for(5.0) == 5.0 and rule.interval_for(30.0) == 30.0
    rule.learn("0.2")
    assert rule.interval_for(5.0) == 0.2  # the least option: as often as the service allows
    assert rule.interval_for(30.0) == 30.0  # a user's slower choice holds
    rule.learn("60")  # the most a stated rule can ask
    assert rule.interval_for(5.0) == 60.0 and rule.interval_for(30.0) == 60.0  # never sooner than allowed


def test_no_option_goes_below_the_spec(tmp_path: Path) -> None:
    """However the options are made (command line, flow parameters or code), not below 5 s: a test lowers
    the poll rule only through the emulator's control API."""
    with pytest.raises(ConfigError, match="--poll-interval must be at least 5, not 0.2"):
        MigrateOptions(inventory="i.csv", poll_interval=0.2)
    with pytest.raises(ConfigError, match="--poll-interval must be at least 5, not 0.5"):
        ApplyOptions(ops="o.csv", poll_interval=0.5)
    assert MigrateOptions(inventory="i.csv").poll_interval == 5.0


def test_the_client_follows_the_rule_the_service_states(
    emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    """With the poll-rule-429 variant the emulator refuses a GET of a video sooner than its rule: the client
    under the spec's rule learns nothing; once the control API states 0.3 s, it GETs one video that often and
    is never refused."""
    emu_control.set_variants(emu, ["poll-rule-429"])
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter) as client:
        video = client.uploads.single(
            parent_id=emu.project_id, title="polled", source=LocalFileSource(sample_clip)
        )
        assert client.transport.poll_rule.seconds == 5.0  # the spec's: nothing was stated
        emu_control.set_poll_rule(emu, 0.3)
        client.videos.list(project_id=emu.project_id)  # any answer states the rule
        assert client.transport.poll_rule.seconds == 0.3
        for _ in range(4):
            assert client.videos.get(video.id).id == video.id
    limiter.close()
    gets = [
        e
        for e in emu_control.requests(emu.workspace_id)
        if e["method"] == "GET" and e["path"].startswith("/v1/videos/")
    ]
    assert len(gets) == 4 and all(e["status"] == 200 for e in gets)  # no 429: each came after the rule


class _NotTheEmulator(http.server.BaseHTTPRequestHandler):
    """Another server (a proxy, the real service): every GET answers an empty list stating a rule of 0.05 s;
    anything else 404. No emulator header."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(f"GET {self.path}")
        body = json.dumps({"data": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header(POLL_RULE_HEADER, "0.05")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.seen.append(f"POST {self.path}")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture()
def not_the_emulator() -> Iterator[str]:
    """A loopback server that is not the emulator, its base URL."""
    _NotTheEmulator.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotTheEmulator)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_only_the_emulator_is_believed_about_its_rule_or_asked_its_extras(
    not_the_emulator: str, emu: Workspace, emu_control: EmulatorControl
) -> None:
    """A server that is not the emulator stating 0.05 s moves nothing (the spec's 5 s holds) and is never sent
    the emulator's license simulation (a token-bearing call to a path the real service lacks); the emulator,
    on loopback and saying so, is believed."""
    with VideoClient(not_the_emulator, not_the_emulator, "tok", limiter=ApiRateLimiter.memory()) as client:
        client.videos.list()
        assert not client.transport.emulator
        assert client.transport.poll_rule.seconds == 5.0
        assert client.drm.simulate_license("v1") is None
    assert _NotTheEmulator.seen and not [s for s in _NotTheEmulator.seen if "_emulator" in s]
    emu_control.set_poll_rule(emu, 0.3)
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory()) as client:
        client.videos.list(project_id=emu.project_id)
        assert client.transport.emulator and client.transport.poll_rule.seconds == 0.3


def test_the_emulator_is_known_only_on_a_loopback_address() -> None:
    assert is_loopback("http://127.0.0.1:8080") and is_loopback("http://localhost") and is_loopback("http://[::1]:1")
    assert not is_loopback("https://api.example.com") and not is_loopback("http://10.0.0.1")

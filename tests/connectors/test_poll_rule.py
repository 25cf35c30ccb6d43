"""The service's poll rule in the client: the spec's 5 s unless the service states another; jobs' polls."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.client import VideoClient
from connectors.client.poll_pacing import PollRule
from connectors.config import POLL_RULE_SECONDS, ConfigError
from connectors.limiter import ApiRateLimiter
from connectors.sources import LocalFileSource
from emulator.control import EmulatorControl, Workspace
from flows.apply.options import ApplyOptions
from flows.migrate.options import MigrateOptions


def test_a_stated_rule_is_taken_within_bounds() -> None:
    rule = PollRule()
    assert rule.seconds == POLL_RULE_SECONDS == 5.0
    for stated in (None, "", "soon", "nan", "inf", "-1", "0", "0.01", "86400"):
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
    rule.learn("60")
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

"""The api.video client against the real stand-in: the API key exchanged for an access token, pages until the
last, X-RateLimit-Retry-After and 5xx, the MP4 asset, and a clear reason for a video without MP4 support."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, logged, until_refused
from videoferry.connectors.platforms.apivideo import ApiVideoClient, NoMp4Error
from videoferry.connectors.platforms.base import PlatformConfigError
from videoferry.connectors.platforms.fetch import download
from videoferry.emulator.platforms.server import Standin


def _videos(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"videoId": f"vi{i:05d}", "title": f"Clip {i}", **extra} for i in range(count)]


def _client(standin: Standin, key: str | None = None) -> ApiVideoClient:
    return ApiVideoClient(standin.base_url, key or standin.token, backoff=QUICK)


@pytest.mark.parametrize(("count", "pages"), [(150, 2), (200, 2), (0, 1)])
def test_pages_until_the_last(apivideo_standin: StandinFixture, count: int, pages: int) -> None:
    standin, control = apivideo_standin
    control.seed(videos=_videos(count))
    with _client(standin) as client:
        videos = list(client.list_videos())
    assert [v.key for v in videos] == [f"apivideo:vi{i:05d}" for i in range(count)]
    assert len(logged(control, "/videos")) == pages
    assert len(logged(control, "/auth/api-key")) == 1  # one access token for the whole listing


def test_metadata_and_privacy(apivideo_standin: StandinFixture) -> None:
    standin, control = apivideo_standin
    control.seed(
        videos=[
            {"videoId": "a", "title": "Open", "description": "Hi", "tags": ["x", "y"]},
            {"videoId": "b", "title": "Private", "public": False},
        ]
    )
    with _client(standin) as client:
        got = [
            (v.title, v.description, v.tags, v.privacy_type, v.source_privacy) for v in client.list_videos()
        ]
    assert got == [("Open", "Hi", ("x", "y"), "anywhere", "public"), ("Private", None, (), None, "private")]


def test_a_wrong_api_key_is_a_setting_to_fix(apivideo_standin: StandinFixture) -> None:
    standin, _ = apivideo_standin
    with _client(standin, "wrong-key") as client, pytest.raises(PlatformConfigError) as caught:
        client.check_access()
    assert "VIDEOFERRY_APIVIDEO_TOKEN" in str(caught.value) and "wrong-key" not in str(caught.value)


def test_a_429_waits_for_x_ratelimit_retry_after_and_a_5xx_is_retried(
    apivideo_standin: StandinFixture,
) -> None:
    standin, control = apivideo_standin
    control.seed(videos=_videos(3))
    control.configure(rate_limit=1, rate_window=2)

    def spend() -> None:  # another user spends the window early in it (bounded)
        for _ in range(500):
            answer = httpx.post(f"{standin.base_url}/auth/api-key", json={"apiKey": standin.token})
            if answer.status_code == 429 and int(answer.headers["X-RateLimit-Retry-After"]) >= 2:
                return
        raise AssertionError("the window was never spent early in it")

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos())) == 3

    log = until_refused(control, spend, listing, lambda e: True)
    refused = [e for e in log if e["status"] == 429]
    for entry in refused:  # each refusal waited for its X-RateLimit-Retry-After: the next call is later
        assert int(log[log.index(entry) + 1]["at"] // 2) > int(entry["at"] // 2)
    control.configure(rate_limit=0, fault_count=2, fault_status=500)
    with _client(standin) as client:
        assert len(list(client.list_videos())) == 3


def test_the_mp4_asset_else_a_reason(apivideo_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = apivideo_standin
    control.seed(videos=[{"videoId": "has", "size": 2500}, {"videoId": "none", "mp4Support": False}])
    with _client(standin) as client:
        link = download(client, "has", tmp_path / "has.mp4")
        with pytest.raises(NoMp4Error) as caught:
            client.resolve_download("none")
    assert link.describe() == "progressive MP4 mp4 (the platform offers no original file)"
    assert (tmp_path / "has.mp4").stat().st_size == 2500
    assert str(caught.value).startswith("apivideo video none has no MP4 asset: it was uploaded without MP4")


def test_an_access_token_near_its_end_is_exchanged_again(apivideo_standin: StandinFixture) -> None:
    standin, control = apivideo_standin
    control.seed(videos=_videos(2))
    control.configure(token_lifetime=30)  # shorter than the margin: every call exchanges it again
    with _client(standin) as client:
        client.check_access()
        assert len(list(client.list_videos())) == 2
    assert len(logged(control, "/auth/api-key")) == 2


def test_an_access_token_ended_early_is_exchanged_again_once(apivideo_standin: StandinFixture) -> None:
    standin, control = apivideo_standin
    control.seed(videos=_videos(2))
    with _client(standin) as client:
        client.check_access()
        control.configure(expire_tokens=True)  # api.video ended it before its expires_in
        assert len(list(client.list_videos())) == 2
    assert [e["status"] for e in logged(control, "/videos")] == [200, 401, 200]
    assert len(logged(control, "/auth/api-key")) == 2

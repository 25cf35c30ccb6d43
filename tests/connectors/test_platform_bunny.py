"""The Bunny Stream client against the real stand-in: the library's key, pages until a short one, 429 and
5xx, the original file when the library keeps originals, else the best MP4 fallback, else a reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, logged, spend_window, until_refused
from videoferry.connectors.platforms.base import NotFoundError, PlatformConfigError, PlatformError
from videoferry.connectors.platforms.bunny import BunnyClient
from videoferry.connectors.platforms.fetch import download
from videoferry.emulator.platforms.bunny import LIBRARY
from videoferry.emulator.platforms.server import Standin

LISTING = f"/library/{LIBRARY}/videos"


def _videos(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"guid": f"g{i:04d}", "title": f"Clip {i}", **extra} for i in range(count)]


def _client(standin: Standin, key: str | None = None, per_page: int = 1000) -> BunnyClient:
    return BunnyClient(
        standin.base_url,
        key or standin.token,
        cdn_url=standin.env["VIDEOFERRY_BUNNY_CDN_URL"],
        per_page=per_page,
        backoff=QUICK,
    )


@pytest.mark.parametrize(("count", "pages"), [(7, 3), (6, 3), (0, 1)])
def test_pages_until_a_short_page(bunny_standin: StandinFixture, count: int, pages: int) -> None:
    standin, control = bunny_standin
    control.seed(videos=_videos(count))
    with _client(standin, per_page=3) as client:
        keys = [v.key for v in client.list_videos(LIBRARY)]
    assert keys == [f"bunny:{LIBRARY}/g{i:04d}" for i in range(count)]  # the key links code expects
    assert len(logged(control, LISTING)) == pages


def test_the_library_key_is_checked(bunny_standin: StandinFixture) -> None:
    standin, _ = bunny_standin
    with _client(standin, "account-key") as client, pytest.raises(PlatformConfigError) as caught:
        client.check_access(LIBRARY)
    assert "VIDEOFERRY_BUNNY_TOKEN does not open library 4242" in str(caught.value)
    assert "account-key" not in str(caught.value)
    with pytest.raises(PlatformConfigError, match="VIDEOFERRY_BUNNY_CDN_URL"):
        BunnyClient.from_env({"VIDEOFERRY_BUNNY_TOKEN": "k"})


def test_a_429_is_waited_for_and_a_5xx_burst_is_retried(bunny_standin: StandinFixture) -> None:
    standin, control = bunny_standin
    control.seed(videos=_videos(3))
    control.configure(rate_limit=1, rate_window=4)
    other = f"{standin.base_url}/library/{LIBRARY}/videos/other"

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos(LIBRARY))) == 3

    log = until_refused(
        control,
        lambda: spend_window(other, "", 4, headers={"AccessKey": standin.token}),
        listing,
        lambda e: e["path"] == LISTING,
    )
    refused = [e for e in log if e["status"] == 429]
    for entry in refused:
        assert int(log[log.index(entry) + 1]["at"] // 4) > int(entry["at"] // 4)
    control.configure(rate_limit=0, fault_count=2, fault_status=503)
    with _client(standin) as client:
        assert len(list(client.list_videos(LIBRARY))) == 3


def test_the_original_else_the_best_mp4_else_a_reason(bunny_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = bunny_standin
    control.seed(videos=[{"guid": "kept", "size": 1234}, {"guid": "nomp4", "resolutions": "240p,720p,360p"}])
    with _client(standin) as client:
        link = download(client, f"{LIBRARY}/kept", tmp_path / "kept.mp4")
        assert link.describe() == "original file (original)"
        control.seed(libraries=[{"id": LIBRARY, "keep_original_files": False}])
        best = client.resolve_download(f"{LIBRARY}/nomp4")
        assert best.describe() == "progressive MP4 play_720p.mp4 (the platform offers no original file)"
        control.seed(libraries=[{"id": LIBRARY, "mp4_fallback": False}])
        with pytest.raises(PlatformError, match="keeps no original files and has no MP4 fallback"):
            client.resolve_download(f"{LIBRARY}/nomp4")
        control.delete("kept")
        with pytest.raises(NotFoundError):
            client.resolve_download(f"{LIBRARY}/kept")
    assert (tmp_path / "kept.mp4").stat().st_size == 1234


def test_videos_not_finished_are_left_out(bunny_standin: StandinFixture) -> None:
    standin, control = bunny_standin
    control.seed(videos=[{"guid": "done"}, {"guid": "busy", "broken": {"status": 2}}])
    with _client(standin) as client:
        assert [v.id for v in client.list_videos(LIBRARY)] == [f"{LIBRARY}/done"]
    assert client.skipped == 1


def test_a_pull_zone_that_refuses_is_a_setting_to_fix(bunny_standin: StandinFixture) -> None:
    standin, control = bunny_standin
    control.seed(videos=[{"guid": "g1"}], libraries=[{"id": LIBRARY, "token_auth": True}])
    with _client(standin) as client, pytest.raises(PlatformConfigError, match="VIDEOFERRY_BUNNY_CDN_URL"):
        client.resolve_download(f"{LIBRARY}/g1")

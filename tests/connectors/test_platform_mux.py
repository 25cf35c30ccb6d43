"""The Mux client against the real Mux stand-in: pages until a short one, basic auth, 429 and 5xx, master
access enabled, waited for, fetched, and enabled again once expired; the static MP4 without a master."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, spend_window, until_refused
from videoferry.connectors.platforms.base import PlatformConfigError, PlatformError, StillProcessing
from videoferry.connectors.platforms.fetch import download
from videoferry.connectors.platforms.mux import MuxClient
from videoferry.connectors.platforms.prepare import Readiness
from videoferry.emulator.platforms.server import Standin, StandinControl

SOON = Readiness(interval=0.01, bound=10.0)


def _assets(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": f"a{i:04d}", "meta": {"title": f"Clip {i}"}, **extra} for i in range(count)]


def _client(standin: Standin, token: str | None = None) -> MuxClient:
    return MuxClient(
        standin.base_url,
        token or standin.token,
        stream_url=standin.env["VIDEOFERRY_MUX_STREAM_URL"],
        readiness=SOON,
        backoff=QUICK,
    )


def _calls(control: StandinControl, method: str, suffix: str) -> list[dict[str, Any]]:
    return [e for e in control.log() if e["method"] == method and e["path"].endswith(suffix)]


@pytest.mark.parametrize(("count", "pages"), [(150, 2), (200, 3), (0, 1)])
def test_pages_until_a_short_page(mux_standin: StandinFixture, count: int, pages: int) -> None:
    standin, control = mux_standin
    control.seed(assets=_assets(count))
    with _client(standin) as client:
        videos = list(client.list_videos())
    assert sorted(v.key for v in videos) == [f"mux:a{i:04d}" for i in range(count)]
    assert len(videos) == count  # each once
    assert len(_calls(control, "GET", "/video/v1/assets")) == pages


def test_signed_playback_is_said_and_not_ready_assets_are_left_out(mux_standin: StandinFixture) -> None:
    standin, control = mux_standin
    control.seed(
        assets=[
            {"id": "open", "meta": {"title": "Open"}},
            {"id": "locked", "passthrough": "Locked", "policy": "signed"},
            {"id": "busy", "status": "preparing"},
        ]
    )
    with _client(standin) as client:
        videos = {v.id: v for v in client.list_videos()}
    assert set(videos) == {"open", "locked"} and client.skipped == 1
    assert (videos["open"].title, videos["open"].privacy_type) == ("Open", "anywhere")
    assert videos["open"].source_url == "https://player.mux.com/pbopen"
    assert (videos["locked"].title, videos["locked"].privacy_type) == ("Locked", None)
    assert videos["locked"].source_privacy == "signed playback policy"


def test_a_wrong_secret_is_a_setting_to_fix(mux_standin: StandinFixture) -> None:
    standin, _ = mux_standin
    token_id = standin.token.partition(":")[0]
    with (
        _client(standin, f"{token_id}:wrong") as client,
        pytest.raises(PlatformConfigError, match="VIDEOFERRY_MUX_TOKEN") as caught,
    ):
        client.check_access()
    assert "wrong" not in str(caught.value)
    with pytest.raises(PlatformConfigError, match="ID:SECRET"):
        _client(standin, "no-colon")


def test_a_429_waits_for_retry_after_and_a_5xx_burst_is_retried(mux_standin: StandinFixture) -> None:
    standin, control = mux_standin
    control.seed(assets=_assets(3))
    control.configure(rate_limit=1, rate_window=2)
    basic = "Basic " + base64.b64encode(standin.token.encode()).decode()

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos())) == 3

    log = until_refused(
        control,
        lambda: spend_window(
            f"{standin.base_url}/video/v1/assets/other", "", 2, headers={"Authorization": basic}
        ),
        listing,
        lambda e: e["method"] == "GET" and e["path"].endswith("/video/v1/assets"),
    )
    refused = [e for e in log if e["status"] == 429]
    for entry in refused:  # each refusal waited for the next window
        after = log[log.index(entry) + 1]
        assert int(after["at"] // 2) > int(entry["at"] // 2)
    control.configure(rate_limit=0, fault_count=2, fault_status=503)
    with _client(standin) as client:
        assert len(list(client.list_videos())) == 3


def test_master_access_is_enabled_waited_for_and_fetched(mux_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = mux_standin
    control.seed(assets=_assets(1, size=5000))
    control.configure(prepare_reads=3)
    with _client(standin) as client:
        link = download(client, "a0000", tmp_path / "a.mp4")
    assert link.describe() == "original file (master)"
    assert (tmp_path / "a.mp4").stat().st_size == 5000
    assert len(_calls(control, "PUT", "/master-access")) == 1
    reads = _calls(control, "GET", "/video/v1/assets/a0000")
    assert len(reads) == 1 + 4  # before enabling, then three reads preparing and one ready


def test_an_expired_master_is_enabled_again(mux_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = mux_standin
    control.seed(assets=_assets(1))
    with _client(standin) as client:
        link = client.resolve_download("a0000")
        control.configure(expire_links=True)  # its 24 hours are over: master access is none again
        again = download(client, "a0000", tmp_path / "a.mp4", link=link)
    assert again.original and again.url != link.url
    assert [e["status"] for e in _calls(control, "GET", "/master.mp4")] == [410, 200]
    assert len(_calls(control, "PUT", "/master-access")) == 2


def test_no_master_falls_back_to_the_best_static_mp4(mux_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = mux_standin
    control.seed(
        assets=[
            {"id": "fails", "master_fails": True},
            {"id": "signed", "master_fails": True, "policy": "signed"},
        ]
    )
    with _client(standin) as client:
        link = download(client, "fails", tmp_path / "f.mp4")
        assert link.describe() == (
            "progressive MP4 highest.mp4 1920x1080 (the platform offers no original file)"
        )
        with pytest.raises(PlatformError, match="no static MP4 rendition on a public playback id"):
            client.resolve_download("signed")
    assert (tmp_path / "f.mp4").stat().st_size == 4096


def test_a_master_never_ready_stops_at_the_bound(mux_standin: StandinFixture) -> None:
    standin, control = mux_standin
    control.seed(assets=_assets(1))
    control.configure(prepare_reads=1_000_000)
    client = _client(standin)
    client.readiness = Readiness(interval=0.01, bound=0.2)
    with client, pytest.raises(StillProcessing, match="the master of mux asset a0000 was not ready after"):
        client.resolve_download("a0000")


def test_an_asset_not_ready_at_mux_has_nothing_to_fetch(mux_standin: StandinFixture) -> None:
    standin, control = mux_standin
    control.seed(assets=[{"id": "busy", "status": "preparing"}])
    with _client(standin) as client, pytest.raises(StillProcessing, match="status preparing at Mux"):
        client.resolve_download("busy")
    assert _calls(control, "PUT", "/master-access") == []

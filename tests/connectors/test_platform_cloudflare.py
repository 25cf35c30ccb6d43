"""The Cloudflare Stream client against the real stand-in: pages joined on `after` at one-second precision
(videos sharing a second neither lost nor repeated), the token's checks, 429 and 5xx, the MP4 download asked
for, waited for and fetched."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, spend_window, until_refused
from videoferry.connectors.platforms.base import PlatformConfigError, PlatformError
from videoferry.connectors.platforms.cloudflare import CloudflareClient
from videoferry.connectors.platforms.fetch import download
from videoferry.connectors.platforms.prepare import Readiness
from videoferry.emulator.platforms.cloudflare import ACCOUNT
from videoferry.emulator.platforms.server import Standin

SOON = Readiness(interval=0.01, bound=10.0)
START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
LISTING = f"/accounts/{ACCOUNT}/stream"


def _at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _client(standin: Standin, *, token: str | None = None, per_page: int = 1000) -> CloudflareClient:
    return CloudflareClient(
        standin.base_url, token or standin.token, ACCOUNT, per_page=per_page, readiness=SOON, backoff=QUICK
    )


@pytest.mark.parametrize("per_page", [5, 7, 1000])
def test_videos_sharing_a_second_are_neither_lost_nor_repeated(
    cloudflare_standin: StandinFixture, per_page: int
) -> None:
    standin, control = cloudflare_standin
    # 3 alone, then 12 within one second (more than a page of 5 or 7), then 9 two to a second
    stamps = [_at(s) for s in (0, 1, 2)] + [_at(3 + i / 20) for i in range(12)]
    stamps += [_at(4 + i // 2 + (i % 2) / 10) for i in range(9)]
    control.seed(
        videos=[{"uid": f"v{i:03d}", "name": f"Clip {i}", "created": c} for i, c in enumerate(stamps)]
    )
    with _client(standin, per_page=per_page) as client:
        videos = list(client.list_videos())
    assert [v.id for v in videos] == [f"v{i:03d}" for i in range(len(stamps))]


def test_a_page_that_ends_inside_a_second_loses_nothing(cloudflare_standin: StandinFixture) -> None:
    standin, control = cloudflare_standin
    control.seed(videos=[{"uid": f"w{i:03d}", "created": _at(i // 3 + (i % 3) / 10)} for i in range(20)])
    with _client(standin, per_page=4) as client:
        keys = [v.key for v in client.list_videos()]
    assert keys == [f"cloudflare:w{i:03d}" for i in range(20)]


def test_signed_urls_are_said_as_the_source_privacy(cloudflare_standin: StandinFixture) -> None:
    standin, control = cloudflare_standin
    control.seed(
        videos=[{"uid": "open", "name": "Open"}, {"uid": "locked", "name": "Locked", "signed": True}]
    )
    with _client(standin) as client:
        got = {v.id: (v.title, v.privacy_type, v.source_privacy) for v in client.list_videos()}
    assert got == {
        "open": ("Open", "anywhere", "public"),
        "locked": ("Locked", None, "signed URLs required"),
    }


def test_the_token_and_account_are_checked(cloudflare_standin: StandinFixture) -> None:
    standin, _ = cloudflare_standin
    with _client(standin, token="wrong") as client, pytest.raises(PlatformConfigError) as caught:
        client.check_access()
    assert "VIDEOFERRY_CLOUDFLARE_TOKEN" in str(caught.value) and "wrong" not in str(caught.value)
    other = CloudflareClient(standin.base_url, standin.token, "someone-else", backoff=QUICK)
    with other, pytest.raises(PlatformConfigError, match="VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID"):
        other.check_access()
    with pytest.raises(PlatformConfigError, match="VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID is not set"):
        CloudflareClient.from_env({"VIDEOFERRY_CLOUDFLARE_TOKEN": "x"})


def test_a_429_waits_for_retry_after_and_a_5xx_burst_is_retried(cloudflare_standin: StandinFixture) -> None:
    standin, control = cloudflare_standin
    control.seed(videos=[{"uid": f"v{i}"} for i in range(3)])
    control.configure(rate_limit=1, rate_window=2)

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos())) == 3

    log = until_refused(
        control,
        lambda: spend_window(f"{standin.base_url}/user/tokens/verify", standin.token, 2),
        listing,
        lambda e: e["path"] == LISTING,
    )
    refused = [e for e in log if e["status"] == 429]
    for entry in refused:
        assert int(log[log.index(entry) + 1]["at"] // 2) > int(entry["at"] // 2)
    control.configure(rate_limit=0, fault_count=2, fault_status=502)
    with _client(standin) as client:
        assert len(list(client.list_videos())) == 3


def test_an_mp4_download_is_asked_for_waited_for_and_fetched(
    cloudflare_standin: StandinFixture, tmp_path: Path
) -> None:
    standin, control = cloudflare_standin
    control.seed(videos=[{"uid": "v1", "size": 3000}])
    control.configure(prepare_reads=3)
    with _client(standin) as client:
        link = download(client, "v1", tmp_path / "v1.mp4")
        assert link.describe() == "progressive MP4 default.mp4 (the platform offers no original file)"
        again = client.resolve_download("v1")  # asked for already: not asked again
    assert (tmp_path / "v1.mp4").stat().st_size == 3000
    calls = [(e["method"], e["status"]) for e in control.log() if e["path"].endswith("/v1/downloads")]
    # none yet, asked for, three looks in progress, ready; then the second resolve's one look
    assert calls == [("GET", 200), ("POST", 200), *[("GET", 200)] * 4, ("GET", 200)]
    assert again.url.split("?")[0] == link.url.split("?")[0]


def test_a_failed_download_says_so(cloudflare_standin: StandinFixture) -> None:
    standin, control = cloudflare_standin
    control.seed(videos=[{"uid": "bad", "download_fails": True}])
    with _client(standin) as client, pytest.raises(PlatformError, match="could not make its MP4 download"):
        client.resolve_download("bad")

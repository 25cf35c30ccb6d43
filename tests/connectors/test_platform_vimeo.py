"""The Vimeo client against the real Vimeo stand-in: paging, its own rate limit, retries, the token's checks,
malformed pages, download links resolved on demand and again when expired."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, spend_window, until_refused
from videoferry.connectors.platforms.base import (
    MalformedPage,
    NotFoundError,
    PlatformConfigError,
    PlatformError,
    parse_time,
)
from videoferry.connectors.platforms.fetch import download
from videoferry.connectors.platforms.vimeo import VimeoClient
from videoferry.emulator.platforms.server import Standin


def _videos(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": str(1000 + i), "name": f"Talk {i}", **extra} for i in range(count)]


def _client(standin: Standin, token: str | None = None) -> VimeoClient:
    return VimeoClient(standin.base_url, token or standin.token, backoff=QUICK)


def _api(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if not e["path"].startswith(("/_download", "/_cdn", "/_standin"))]


def test_lists_every_page_in_order_following_paging_next(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=_videos(205))
    with _client(standin) as client:
        videos = list(client.list_videos(chapters=False))
    assert [v.id for v in videos] == [str(1000 + i) for i in range(205)]
    assert [v.key for v in videos[:2]] == ["vimeo:1000", "vimeo:1001"]
    pages = [e for e in control.log() if e["path"] == "/me/videos"]
    assert len(pages) == 3  # 100 + 100 + 5, each page asked for once


def test_a_folder_lists_its_videos_with_metadata_and_chapters(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(
        folders=[{"id": "77", "name": "Conference 2026"}],
        videos=[
            {
                "id": "1",
                "name": "Keynote",
                "folder": "77",
                "description": "Opening\ntalk",
                "tags": ["Keynote"],
                "chapters": [{"title": "Intro", "timecode": 0}, {"title": "Q&A", "timecode": 95}],
            },
            {"id": "2", "name": "Elsewhere"},
            {"id": "3", "name": "Draft", "folder": "77", "privacy": "password"},
        ],
    )
    with _client(standin) as client:
        videos = list(client.list_videos("77"))
    assert [v.id for v in videos] == ["1", "3"]
    keynote, draft = videos
    assert (keynote.title, keynote.description, keynote.tags) == ("Keynote", "Opening\ntalk", ("Keynote",))
    assert [(c.time, c.title) for c in keynote.chapters or ()] == [(0.0, "Intro"), (95.0, "Q&A")]
    assert (keynote.folder, keynote.folder_id, keynote.privacy_type) == ("Conference 2026", "77", "anywhere")
    assert keynote.source_url == "https://vimeo.com/1"
    assert (draft.privacy_type, draft.source_privacy) == (None, "password")  # no match in the service


def test_an_unknown_folder_is_a_setting_to_fix(vimeo_standin: StandinFixture) -> None:
    standin, _ = vimeo_standin
    with _client(standin) as client, pytest.raises(PlatformConfigError, match="no folder 404"):
        list(client.list_videos("404"))


def test_no_call_before_the_reset_once_none_remain(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=_videos(250))
    control.configure(rate_limit=2, rate_window=2)
    with _client(standin) as client:
        videos = list(client.list_videos(chapters=False))  # 3 pages: more than one window holds
    assert len(videos) == 250
    log = _api(control.log())
    assert [e["status"] for e in log] == [200, 200, 200]  # X-RateLimit-Remaining 0 waited out: no 429
    windows = [int(e["at"] // 2) for e in log]
    assert all(windows.count(w) <= 2 for w in windows)


def test_a_429_waits_until_x_ratelimit_reset(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=_videos(3))
    control.configure(rate_limit=1, rate_window=2)

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos(chapters=False))) == 3

    log = until_refused(
        control,
        lambda: spend_window(f"{standin.base_url}/me", standin.token, 2),  # another user of the token
        listing,
        lambda e: bool(_api([e])),
    )
    refused = [e for e in log if e["status"] == 429]
    assert len(refused) == 1
    reset = (int(refused[0]["at"] // 2) + 1) * 2  # the window's end, as X-RateLimit-Reset said it
    after = log[log.index(refused[0]) + 1]
    assert after["status"] == 200 and after["at"] >= reset


def test_reset_times_in_each_notation() -> None:
    assert parse_time("1795912910") == 1795912910.0
    assert parse_time("2026-11-29T00:40:00+00:00") == parse_time("Sun, 29 Nov 2026 00:40:00 GMT")
    assert parse_time("soon") is None


def test_a_5xx_burst_is_retried(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=_videos(2))
    control.configure(fault_count=3, fault_status=503)
    with _client(standin) as client:
        assert len(list(client.list_videos(chapters=False))) == 2
    assert [e["status"] for e in _api(control.log())] == [503, 503, 503, 200]


def test_5xx_beyond_the_retries_stops_naming_the_page(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.configure(fault_count=10, fault_status=500)
    with (
        _client(standin) as client,
        pytest.raises(PlatformError, match="answered 500 4 times for vimeo page 1"),
    ):
        list(client.list_videos(chapters=False))


def test_a_source_that_is_gone_stops_with_a_clear_message() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    with VimeoClient(f"http://127.0.0.1:{port}", "t", backoff=QUICK) as client:
        with pytest.raises(PlatformError, match="does not answer .* after 4 tries.*VIDEOFERRY_VIMEO_API_URL"):
            client.check_access()


def test_a_wrong_token_is_a_setting_to_fix(vimeo_standin: StandinFixture) -> None:
    standin, _ = vimeo_standin
    with _client(standin, "not-the-token") as client, pytest.raises(PlatformConfigError) as caught:
        client.check_access()
    assert "VIDEOFERRY_VIMEO_TOKEN" in str(caught.value) and "not-the-token" not in str(caught.value)


def test_a_token_without_video_files_is_a_setting_to_fix(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(tokens={"public-only": ["public", "private"]})
    with (
        _client(standin, "public-only") as client,
        pytest.raises(PlatformConfigError, match="lacks the scope"),
    ):
        client.check_access()


def test_a_plan_without_downloads_is_a_setting_to_fix(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.configure(plan="basic")
    with _client(standin) as client, pytest.raises(PlatformConfigError, match="plan \\('basic'"):
        client.check_access()
    control.configure(plan="standard")
    with _client(standin) as client:
        assert client.check_access() == "standard"


def test_a_malformed_page_names_the_page_and_field(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    videos = _videos(150)
    videos[149]["broken"] = {"uri": None}
    control.seed(videos=videos)
    with _client(standin) as client, pytest.raises(MalformedPage) as caught:
        list(client.list_videos(chapters=False))
    assert str(caught.value) == (
        "vimeo page 2 of the account's videos, field data[49].uri: expected str, got None"
    )


def test_the_original_is_resolved_else_the_best_progressive_mp4(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {"id": "1", "name": "with original"},
            {
                "id": "2",
                "name": "no original",
                "renditions": [
                    {"quality": "sd", "rendition": "360p", "width": 640, "height": 360, "type": "video/mp4"},
                    {
                        "quality": "hd",
                        "rendition": "1080p",
                        "width": 1920,
                        "height": 1080,
                        "type": "video/mp4",
                    },
                    {
                        "quality": "hls",
                        "rendition": "adaptive",
                        "width": 3840,
                        "height": 2160,
                        "type": "application/x-mpegURL",
                    },
                ],
            },
        ]
    )
    with _client(standin) as client:
        original = client.resolve_download("1")
        fallback = client.resolve_download("2")
    assert original.original and original.describe() == "original file (source 1920x1080)"
    assert not fallback.original and fallback.label == "1080p"
    assert fallback.describe() == "progressive MP4 1080p 1920x1080 (the platform offers no original file)"
    assert "sig=" not in repr(original)  # the signed link never shows


def test_an_expired_link_is_resolved_again(vimeo_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {
                "id": "5",
                "name": "clip",
                "renditions": [{"quality": "source", "rendition": "source", "type": "source", "size": 5000}],
            }
        ]
    )
    with _client(standin) as client:
        link = client.resolve_download("5")
        control.configure(expire_links=True)  # a day passed since the listing
        used = download(client, "5", tmp_path / "clip.mp4", link=link)
    assert used.url != link.url and (tmp_path / "clip.mp4").stat().st_size == 5000
    files = [(e["path"], e["status"]) for e in control.log() if e["path"].startswith("/_download")]
    assert files == [("/_download/5/source", 410), ("/_download/5/source", 302)]


def test_a_video_deleted_since_the_listing_is_not_found(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[{"id": "9", "name": "going"}])
    with _client(standin) as client:
        assert [v.id for v in client.list_videos(chapters=False)] == ["9"]
        control.delete("9")
        with pytest.raises(NotFoundError, match="no vimeo video 9"):
            client.resolve_download("9")

"""The Wistia client against the real Wistia stand-in: pages until a short one in a stable order, Retry-After,
5xx retries, the token's checks, malformed pages, the OriginalFile else the best MP4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.platforms import QUICK, StandinFixture, logged, spend_window, until_refused
from videoferry.connectors.platforms.base import MalformedPage, NotFoundError, PlatformConfigError
from videoferry.connectors.platforms.fetch import download
from videoferry.connectors.platforms.wistia import WistiaClient
from videoferry.emulator.platforms.server import Standin


def _medias(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"hashed_id": f"h{i:05d}", "name": f"Clip {i}", **extra} for i in range(count)]


def _client(standin: Standin, token: str | None = None) -> WistiaClient:
    return WistiaClient(standin.base_url, token or standin.token, backoff=QUICK)


@pytest.mark.parametrize(("count", "pages"), [(150, 2), (200, 3), (0, 1)])
def test_pages_until_a_short_page(wistia_standin: StandinFixture, count: int, pages: int) -> None:
    standin, control = wistia_standin
    control.seed(medias=_medias(count))
    with _client(standin) as client:
        videos = list(client.list_videos())
    assert [v.id for v in videos] == [f"h{i:05d}" for i in range(count)]  # oldest first, each once
    assert len(logged(control, "/v1/medias.json")) == pages


def test_a_project_lists_its_videos_with_metadata_and_leaves_out_other_media(
    wistia_standin: StandinFixture,
) -> None:
    standin, control = wistia_standin
    control.seed(
        projects=[{"hashed_id": "proj1", "name": "Webinars"}],
        medias=[
            {
                "hashed_id": "a1",
                "name": "Launch",
                "project": "proj1",
                "description": "<p>Hi</p>",
                "tags": ["x"],
            },
            {"hashed_id": "a2", "name": "Slides", "project": "proj1", "type": "PdfDocument"},
            {"hashed_id": "a3", "name": "Other"},
        ],
    )
    with _client(standin) as client:
        client.check_access("proj1")
        videos = list(client.list_videos("proj1"))
    assert [(v.key, v.title, v.folder, v.folder_id, v.tags) for v in videos] == [
        ("wistia:a1", "Launch", "Webinars", "proj1", ("x",))
    ]
    assert client.skipped == 1


def test_an_unknown_project_is_a_setting_to_fix(wistia_standin: StandinFixture) -> None:
    standin, _ = wistia_standin
    with _client(standin) as client, pytest.raises(PlatformConfigError, match="no project nope"):
        client.check_access("nope")


def test_a_429_waits_for_retry_after(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    control.seed(medias=_medias(3))
    control.configure(rate_limit=1, rate_window=2)

    def listing() -> None:
        with _client(standin) as client:
            assert len(list(client.list_videos())) == 3

    log = until_refused(
        control,
        lambda: spend_window(f"{standin.base_url}/v1/projects.json", standin.token, 2),  # another user
        listing,
        lambda e: e["path"] in ("/v1/account.json", "/v1/medias.json"),
    )
    refused = [e for e in log if e["status"] == 429]
    for entry in refused:  # each refusal waited for its Retry-After: the next call comes in a later window
        after = log[log.index(entry) + 1]
        assert int(after["at"] // 2) > int(entry["at"] // 2)


def test_a_5xx_burst_is_retried(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    control.seed(medias=_medias(2))
    control.configure(fault_count=2, fault_status=502)
    with _client(standin) as client:
        assert len(list(client.list_videos())) == 2
    assert [e["status"] for e in logged(control, "/v1/medias.json")] == [502, 502, 200]


def test_a_wrong_token_is_a_setting_to_fix(wistia_standin: StandinFixture) -> None:
    standin, _ = wistia_standin
    with (
        _client(standin, "wrong") as client,
        pytest.raises(PlatformConfigError, match="VIDEOFERRY_WISTIA_TOKEN"),
    ):
        client.check_access()


def test_a_token_that_may_not_read_is_a_setting_to_fix(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    control.seed(tokens={"upload-only": ["upload"]})
    with (
        _client(standin, "upload-only") as client,
        pytest.raises(PlatformConfigError, match="may not read medias"),
    ):
        client.check_access()


def test_a_malformed_page_names_the_page_and_field(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    medias = _medias(120)
    medias[103]["broken"] = {"name": 17}
    control.seed(medias=medias)
    with _client(standin) as client, pytest.raises(MalformedPage) as caught:
        list(client.list_videos())
    assert str(caught.value) == "wistia page 2 of the medias, field [3].name: expected str, got 17"


def test_the_original_file_else_the_best_mp4(wistia_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = wistia_standin
    control.seed(
        medias=[
            {"hashed_id": "orig", "name": "a"},
            {
                "hashed_id": "mp4s",
                "name": "b",
                "assets": [
                    {"type": "Mp4VideoFile", "width": 640, "height": 360, "size": 300},
                    {"type": "HdMp4VideoFile", "width": 1280, "height": 720, "size": 700},
                    {"type": "StillImageFile", "width": 4000, "height": 3000, "contentType": "image/jpeg"},
                ],
            },
        ]
    )
    with _client(standin) as client:
        assert client.resolve_download("orig").describe() == "original file (OriginalFile 1920x1080)"
        best = client.resolve_download("mp4s")
        assert (best.original, best.label, best.size) == (False, "HdMp4VideoFile", 700)
        control.configure(expire_links=True)
        download(client, "mp4s", tmp_path / "b.mp4", link=best)
    assert (tmp_path / "b.mp4").stat().st_size == 700


def test_a_media_deleted_since_the_listing_is_not_found(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    control.seed(medias=[{"hashed_id": "gone1", "name": "x"}])
    control.delete("gone1")
    with _client(standin) as client, pytest.raises(NotFoundError, match="no wistia media gone1"):
        client.resolve_download("gone1")

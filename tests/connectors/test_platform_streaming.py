"""A platform source's listing made into rows as its pages come (connectors/platforms/source_rows.py): the
listed videos are not all kept at once, and the rows, origins and notes are those of the whole listing."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from tests.fixtures.platforms import StandinFixture
from videoferry.connectors.platforms.base import SourceVideo
from videoferry.connectors.platforms.origins import BATCH
from videoferry.connectors.platforms.source_rows import source_rows
from videoferry.connectors.platforms.vimeo import PER_PAGE
from videoferry.emulator.platforms import vimeo as vimeo_standin_module

ACCOUNT = 2 * BATCH + 150


def _alive(kind: type) -> int:
    # type(), not isinstance(): isinstance reads a weak proxy's __class__, and a dead one
    # (other tests' objects in this process) raises ReferenceError; in CI it did, in the
    # stand-in's handler where this runs, which then answered 500.
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def test_a_large_listing_keeps_no_more_than_a_batch_of_videos_alive(
    vimeo_standin: StandinFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {"id": str(1000 + i), "name": f"Talk {i}", "privacy": "unlisted" if i == 7 else "anybody"}
            for i in range(ACCOUNT)
        ]
    )
    seen_alive: list[int] = []
    collection = vimeo_standin_module._collection

    def counting(request: Any, *args: Any, **kwargs: Any) -> Any:
        # The stand-in runs in this process: when it serves a page, the listing's consumer waits for it,
        # so the SourceVideos alive now are all the listing holds between pages.
        if request.url.path == "/me/videos":
            seen_alive.append(_alive(SourceVideo))
        return collection(request, *args, **kwargs)

    monkeypatch.setattr(vimeo_standin_module, "_collection", counting)
    env = {"VIDEOFERRY_VIMEO_API_URL": standin.base_url, "VIDEOFERRY_VIMEO_TOKEN": standin.token}
    listed = source_rows("vimeo:", {}, env)

    assert len(seen_alive) == -(-ACCOUNT // PER_PAGE)  # every page asked for once
    # Before its last page, a listing that kept every video would hold ACCOUNT - PER_PAGE of them.
    assert max(seen_alive) <= BATCH + PER_PAGE, seen_alive
    frame = listed.frame()
    assert frame["key"].to_list() == [f"vimeo:{1000 + i}" for i in range(ACCOUNT)]
    assert frame.row(7, named=True)["privacy_type"] is None
    assert frame.row(8, named=True)["privacy_type"] == "anywhere"
    assert len(listed.origins) == ACCOUNT
    origin = listed.origins.get("vimeo:1007")
    assert origin is not None and origin.privacy == "unlisted" and origin.privacy_unmapped
    assert origin.url == "https://vimeo.com/1007"
    assert listed.origins.get("vimeo:999") is None
    assert any(n.startswith("1 videos have a privacy the service has no match for") for n in listed.notes)
    assert (
        listed.notes[-1] == f"listed {ACCOUNT} videos from vimeo: in {2 + len(seen_alive) + ACCOUNT} calls"
    )  # and chapters


def test_a_video_listed_twice_as_a_page_shifts_is_kept_once(
    vimeo_standin: StandinFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[{"id": str(1000 + i), "name": f"Talk {i}"} for i in range(250)])
    collection = vimeo_standin_module._collection

    def shifting(request: Any, *args: Any, **kwargs: Any) -> Any:
        answer = collection(request, *args, **kwargs)
        if request.url.path == "/me/videos" and request.query_params.get("page") == "2":
            # An older video uploaded while the listing runs: every later page shifts by one.
            standin.state.seed({"videos": [{"id": "999", "created_time": "2001-01-01T00:00:00+00:00"}]})
        return answer

    monkeypatch.setattr(vimeo_standin_module, "_collection", shifting)
    env = {"VIDEOFERRY_VIMEO_API_URL": standin.base_url, "VIDEOFERRY_VIMEO_TOKEN": standin.token}
    listed = source_rows("vimeo:", {}, env, chapters=False)

    keys = listed.frame()["key"].to_list()
    assert keys == [f"vimeo:{1000 + i}" for i in range(250)]  # vimeo:1199 came twice, kept once
    assert len(listed.origins) == 250
    assert listed.notes[-1] == "listed 250 videos from vimeo: in 5 calls"

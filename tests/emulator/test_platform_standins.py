"""The Vimeo and Wistia stand-ins hold to the rules of the platforms' public references (raw HTTP, no client
of ours): auth and scopes, paging bounds, rate limits with 429, expiring links, plans, faults."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from tests.fixtures.platforms import StandinFixture
from videoferry.emulator.platforms.server import Standin, StandinControl


def _vimeo(standin: Standin, path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"bearer {token or standin.token}"}
    return httpx.get(standin.base_url + path, headers=headers)


def _wistia(standin: Standin, path: str, token: str | None = None) -> httpx.Response:
    return httpx.get(standin.base_url + path, headers={"Authorization": f"Bearer {token or standin.token}"})


def test_vimeo_pages_with_paging_links_and_at_most_100(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[{"id": str(i), "name": f"v{i}"} for i in range(1, 4)])
    first = _vimeo(standin, "/me/videos?per_page=2&sort=date&direction=asc").json()
    assert (first["total"], first["page"], [v["uri"] for v in first["data"]]) == (
        3,
        1,
        ["/videos/1", "/videos/2"],
    )
    second = _vimeo(standin, first["paging"]["next"]).json()
    assert [v["uri"] for v in second["data"]] == ["/videos/3"] and second["paging"]["next"] is None
    assert _vimeo(standin, "/me/videos?per_page=101").status_code == 400


def test_vimeo_scopes_and_plan_decide_what_is_shown(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[{"id": "1", "name": "public"}, {"id": "2", "name": "private", "privacy": "nobody"}],
        tokens={"public-only": ["public"]},
    )
    assert _vimeo(standin, "/me/videos", "nope").status_code == 401
    shown = _vimeo(standin, "/me/videos", "public-only").json()["data"]
    assert [v["uri"] for v in shown] == ["/videos/1"] and "download" not in shown[0]
    assert _vimeo(standin, "/videos/2", "public-only").status_code == 404
    assert _vimeo(standin, "/oauth/verify", "public-only").json()["scope"] == "public"
    full = _vimeo(standin, "/videos/2").json()
    assert [d["quality"] for d in full["download"]] == ["source", "hd", "sd"]
    control.configure(plan="basic")
    assert "download" not in _vimeo(standin, "/videos/2").json()
    assert _vimeo(standin, "/me").json()["account"] == "basic"


def test_vimeo_download_links_redirect_until_they_expire(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {
                "id": "1",
                "name": "a",
                "renditions": [{"quality": "source", "rendition": "source", "type": "source", "size": 1234}],
            }
        ]
    )
    entry = _vimeo(standin, "/videos/1").json()["download"][0]
    first = httpx.get(entry["link"])
    assert first.status_code == 302
    assert len(httpx.get(entry["link"], follow_redirects=True).content) == 1234
    assert httpx.get(entry["link"].replace("sig=", "sig=0")).status_code == 403
    control.configure(expire_links=True)
    assert httpx.get(entry["link"]).status_code == 410


def _in_one_window(control: StandinControl, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, ...]:
    """Two requests under a limit of one a minute, sent within one minute of the epoch: the stand-ins'
    windows are aligned on it, so a pair that straddles a minute's end is sent again (at most twice more)."""
    for _ in range(3):
        control.configure(rate_limit=1, rate_window=60)  # a new window: nothing spent
        start = time.time()
        pair = (send(), send())
        if start // 60 == time.time() // 60:
            return pair
    raise AssertionError("three pairs of requests each straddled the end of a minute")


def test_vimeo_rate_limit_headers_and_429(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    ok, refused = _in_one_window(control, lambda: _vimeo(standin, "/me"))
    assert (ok.status_code, ok.headers["X-RateLimit-Remaining"]) == (200, "0")
    assert (refused.status_code, refused.headers["X-RateLimit-Remaining"]) == (429, "0")
    assert refused.headers["X-RateLimit-Reset"] == ok.headers["X-RateLimit-Reset"]


def test_vimeo_5xx_burst_then_answers(vimeo_standin: StandinFixture) -> None:
    standin, control = vimeo_standin
    control.configure(fault_count=2, fault_status=503)
    assert [_vimeo(standin, "/me").status_code for _ in range(3)] == [503, 503, 200]


def test_wistia_permissions_paging_order_and_429(wistia_standin: StandinFixture) -> None:
    standin, control = wistia_standin
    control.seed(
        medias=[{"hashed_id": f"m{i}", "name": f"n{i}"} for i in range(105)],
        tokens={"upload-only": ["upload"]},
    )
    assert _wistia(standin, "/v1/medias.json", "nope").status_code == 401
    assert _wistia(standin, "/v1/account.json", "upload-only").status_code == 200
    assert _wistia(standin, "/v1/medias.json", "upload-only").status_code == 403
    page = _wistia(standin, "/v1/medias.json?per_page=500&sort_by=created&sort_direction=1").json()
    assert len(page) == 100 and page[0]["hashed_id"] == "m0"  # per_page is at most 100
    newest = _wistia(standin, "/v1/medias.json?per_page=1&sort_by=created&sort_direction=0").json()
    assert newest[0]["hashed_id"] == "m104"
    assert [a["type"] for a in page[0]["assets"]] == ["OriginalFile", "HdMp4VideoFile", "Mp4VideoFile"]
    _, refused = _in_one_window(control, lambda: _wistia(standin, "/v1/account.json"))
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60

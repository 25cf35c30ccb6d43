"""The Mux, Cloudflare Stream, api.video and Bunny Stream stand-ins hold to their references' rules, asked
directly (no client of ours): auth, page bounds, Cloudflare's `after` by the second, prepared files."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import httpx

from tests.fixtures.platforms import StandinFixture
from videoferry.emulator.platforms.cloudflare import ACCOUNT


def test_mux_basic_auth_page_bounds_and_master_access(mux_standin: StandinFixture) -> None:
    standin, control = mux_standin
    control.seed(assets=[{"id": "a1"}])
    basic = {"Authorization": "Basic " + base64.b64encode(standin.token.encode()).decode()}
    bearer = {"Authorization": f"Bearer {standin.token}"}
    url = f"{standin.base_url}/video/v1/assets"
    assert httpx.get(url, headers=bearer).status_code == 401
    assert httpx.get(url, params={"limit": 101}, headers=basic).status_code == 400
    assert httpx.get(f"{url}/a1", headers=basic).json()["data"]["master_access"] == "none"
    put = httpx.put(f"{url}/a1/master-access", json={"master_access": "temporary"}, headers=basic)
    assert put.json()["data"]["master"] == {"status": "preparing"}
    assert httpx.get(f"{url}/a1", headers=basic).json()["data"]["master"]["status"] == "preparing"
    assert httpx.get(f"{url}/a1", headers=basic).json()["data"]["master"]["status"] == "ready"


def test_cloudflare_after_is_compared_by_the_second(cloudflare_standin: StandinFixture) -> None:
    standin, control = cloudflare_standin
    control.seed(
        videos=[
            {"uid": "x", "created": "2026-03-01T12:00:00.100Z"},
            {"uid": "y", "created": "2026-03-01T12:00:00.900Z"},
            {"uid": "z", "created": "2026-03-01T12:00:01.000Z"},
        ]
    )
    headers = {"Authorization": f"Bearer {standin.token}"}
    url = f"{standin.base_url}/accounts/{ACCOUNT}/stream"
    body = httpx.get(url, params={"asc": "true", "after": "2026-03-01T12:00:00.100Z"}, headers=headers).json()
    assert set(body) == {"success", "errors", "messages", "result"}
    assert [v["uid"] for v in body["result"]] == ["z"]  # y shares x's second: not after it
    newest_first = httpx.get(url, headers=headers).json()["result"]
    assert [v["uid"] for v in newest_first] == ["z", "y", "x"]
    assert httpx.get(f"{standin.base_url}/accounts/other/stream", headers=headers).status_code == 403


def test_apivideo_needs_an_access_token_and_shows_mp4_only_with_support(
    apivideo_standin: StandinFixture,
) -> None:
    standin, control = apivideo_standin
    control.seed(videos=[{"videoId": "a"}, {"videoId": "b", "mp4Support": False}])
    assert (
        httpx.get(
            f"{standin.base_url}/videos", headers={"Authorization": f"Bearer {standin.token}"}
        ).status_code
        == 401
    )
    token = httpx.post(f"{standin.base_url}/auth/api-key", json={"apiKey": standin.token}).json()
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    headers = {"Authorization": f"Bearer {token['access_token']}"}
    body = httpx.get(f"{standin.base_url}/videos", headers=headers).json()
    assert body["pagination"]["itemsTotal"] == 2
    assert ["mp4" in v["assets"] for v in body["data"]] == [True, False]


def test_bunny_original_only_when_kept(bunny_standin: StandinFixture) -> None:
    standin, control = bunny_standin
    control.seed(videos=[{"guid": "g1"}])
    cdn = standin.env["VIDEOFERRY_BUNNY_CDN_URL"]
    assert (
        httpx.get(f"{standin.base_url}/library/4242/videos", headers={"AccessKey": "no"}).status_code == 401
    )
    assert httpx.head(f"{cdn}/g1/original").status_code == 200
    control.seed(libraries=[{"id": "4242", "keep_original_files": False}])
    assert httpx.head(f"{cdn}/g1/original").status_code == 404
    assert httpx.head(f"{cdn}/g1/play_720p.mp4").status_code == 200
    assert httpx.head(f"{cdn}/g1/play_1080p.mp4").status_code == 404  # not among its resolutions


def test_the_standin_command_prints_what_to_export() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "videoferry.flows.cli", "standin", "cloudflare"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert first["platform"] == "cloudflare" and first["env"] == {"VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID": ACCOUNT}
    assert first["base_url"].startswith("http://127.0.0.1:")

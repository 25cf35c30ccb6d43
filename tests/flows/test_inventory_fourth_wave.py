"""`videoferry inventory` from Mux, Cloudflare Stream, api.video and Bunny Stream against their real
stand-ins: the inventory written is one the inventory reader takes (keys `<platform>:<its id>`, no link,
no secret), and a token to fix exits 2 with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.inventory_cli import run_inventory
from tests.fixtures.platforms import StandinFixture, platform_env
from videoferry.connectors.inventory import read_inventory

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"

#: platform: (source form, seed, keys expected, privacy types expected, the note a private video gives)
CASES: dict[str, tuple[str, dict[str, Any], list[str], list[str | None], str | None]] = {
    "mux": (
        "mux:",
        {"assets": [{"id": "m1", "meta": {"title": "One"}}, {"id": "m2", "policy": "signed"}]},
        ["mux:m2", "mux:m1"],  # Mux lists newest first
        [None, "anywhere"],
        "1 videos have a privacy the service has no match for",
    ),
    "cloudflare": (
        "cloudflare:",
        {
            "videos": [
                {"uid": "c1", "name": "One"},
                {"uid": "c2", "name": "Two", "signed": True},
                {"uid": "c3", "ready": False},
            ]
        },
        ["cloudflare:c1", "cloudflare:c2"],
        ["anywhere", None],
        "left out 1 videos not ready to stream (uploading or encoding)",
    ),
    "apivideo": (
        "apivideo:",
        {
            "videos": [
                {"videoId": "a1", "title": "One"},
                {"videoId": "a2", "title": "Two", "public": False, "mp4Support": False},
            ]
        },
        ["apivideo:a1", "apivideo:a2"],
        ["anywhere", None],
        "1 videos have no MP4 support (uploaded without mp4Support) and cannot be fetched: apivideo:a2",
    ),
    "bunny": (
        "bunny:4242",
        {"videos": [{"guid": "b1", "title": "One"}, {"guid": "b2", "title": "Two"}]},
        ["bunny:4242/b1", "bunny:4242/b2"],
        [None, None],
        None,
    ),
}


@pytest.mark.parametrize("platform", list(CASES))
def test_inventory_is_one_migrate_reads(
    platform: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    standin, control = request.getfixturevalue(f"{platform}_standin")
    source, seed, keys, privacy, note = CASES[platform]
    control.seed(**seed)
    out = tmp_path / f"{platform}.csv"
    code, stdout, stderr = run_inventory(platform_env(standin), source, "--out", str(out))
    assert code == 0, stderr
    assert f"listed 2 videos from {source}" in stdout and f"wrote {out}" in stdout
    assert note is None or note in stdout
    text = out.read_text()
    assert standin.token not in stdout + stderr + text
    assert standin.base_url not in text  # no download link, no stand-in address
    inventory = read_inventory(str(out), default_parent_id=PARENT)
    assert inventory.errors == []
    rows = inventory.rows.select("key", "privacy_type").to_dicts()
    assert [r["key"] for r in rows] == keys
    assert [r["privacy_type"] for r in rows] == privacy


@pytest.mark.parametrize("platform", list(CASES))
def test_a_wrong_token_exits_2_before_listing(
    platform: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    standin, control = request.getfixturevalue(f"{platform}_standin")
    source, seed, *_ = CASES[platform]
    control.seed(**seed)
    wrong = "wrong-id:wrong-secret" if platform == "mux" else "wrong-token"
    out = tmp_path / "inv.csv"
    code, _, stderr = run_inventory(platform_env(standin, wrong), source, "--out", str(out))
    assert code == 2, stderr
    assert f"VIDEOFERRY_{platform.upper()}_TOKEN" in stderr and wrong not in stderr
    assert not out.exists()
    listings = [e for e in control.log() if e["status"] == 200]
    assert listings == []  # refused at the check: nothing was listed


def test_a_listing_that_cannot_finish_exits_1(cloudflare_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = cloudflare_standin
    control.seed(videos=[{"uid": "c1"}, {"uid": "c2", "broken": {"created": "yesterday"}}])
    out = tmp_path / "inv.jsonl"
    code, _, stderr = run_inventory(platform_env(standin), "cloudflare:", "--out", str(out))
    assert code == 1
    assert "field result[1].created: not a date-time: 'yesterday'; nothing was written" in stderr
    assert not out.exists()


def test_a_bunny_source_names_its_library(bunny_standin: StandinFixture, tmp_path: Path) -> None:
    standin, _ = bunny_standin
    code, _, stderr = run_inventory(platform_env(standin), "bunny:", "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "bunny:<library id>" in stderr

"""`videoferry inventory SOURCE --out FILE` against the real stand-ins: the inventory written is one the
inventory reader takes (keys are the platforms' ids, no link), and what to fix exits 2 before any listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl

from tests.fixtures.inventory_cli import run_inventory
from tests.fixtures.platforms import StandinFixture, platform_env
from videoferry.connectors.inventory import read_inventory

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"


def test_vimeo_inventory_is_one_migrate_reads(vimeo_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = vimeo_standin
    control.seed(
        folders=[{"id": "7", "name": "Talks"}],
        videos=[
            {
                "id": "11",
                "name": "Keynote, day 1",
                "folder": "7",
                "description": 'Line one\n"quoted"',
                "tags": ["conf", "2026"],
                "chapters": [{"title": "Intro", "timecode": 0}, {"title": "Demo", "timecode": 90}],
            },
            {"id": "12", "name": "Hidden", "privacy": "nobody"},
            {"id": "13", "name": "Unlisted", "privacy": "unlisted"},
        ],
    )
    out = tmp_path / "vimeo.csv"
    code, stdout, stderr = run_inventory(platform_env(standin), "vimeo:", "--out", str(out))
    assert code == 0, stderr
    assert f"wrote {out}" in stdout and "listed 3 videos from vimeo:" in stdout
    assert "1 videos have a privacy the service has no match for" in stdout
    text = out.read_text()
    assert "http" not in text.replace("https://vimeo.com/", "")  # no download link, only the public page
    assert standin.token not in stdout + stderr + text
    inventory = read_inventory(str(out), default_parent_id=PARENT)
    assert inventory.errors == []
    assert inventory.warnings == [
        "ignored unknown columns: 'platform_privacy', 'platform_folder', 'platform_folder_id',"
        " 'platform_url', 'platform_created'"
    ]
    rows = inventory.rows.select("key", "title", "description", "tags", "chapters", "privacy_type")
    assert rows.to_dicts() == [
        {
            "key": "vimeo:11",
            "title": "Keynote, day 1",
            "description": 'Line one\n"quoted"',
            "tags": ["conf", "2026"],
            "chapters": [{"time": 0.0, "title": "Intro"}, {"time": 90.0, "title": "Demo"}],
            "privacy_type": "anywhere",
        },
        {
            "key": "vimeo:12",
            "title": "Hidden",
            "description": None,
            "tags": None,
            "chapters": [],
            "privacy_type": "nowhere",
        },
        {
            "key": "vimeo:13",
            "title": "Unlisted",
            "description": None,
            "tags": None,
            "chapters": [],
            "privacy_type": None,
        },
    ]
    extra = pl.read_csv(out, columns=["platform_folder", "platform_url"]).row(0)
    assert extra == ("Talks", "https://vimeo.com/11")


def test_wistia_project_inventory_as_json_lines(wistia_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = wistia_standin
    control.seed(
        projects=[{"hashed_id": "p9", "name": "Webinars"}],
        medias=[{"hashed_id": "abc", "name": "One", "project": "p9"}, {"hashed_id": "def", "name": "Two"}],
    )
    out = tmp_path / "wistia.jsonl"
    code, _, stderr = run_inventory(platform_env(standin), "wistia:project/p9", "--out", str(out))
    assert code == 0, stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["key"], r["source"], r["platform_folder"]) for r in rows] == [
        ("wistia:abc", "wistia:abc", "Webinars")
    ]
    assert read_inventory(str(out), default_parent_id=PARENT).errors == []


def test_settings_to_fix_exit_2_and_write_nothing(vimeo_standin: StandinFixture, tmp_path: Path) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[{"id": "1", "name": "a"}], tokens={"no-files": ["public", "private"]})
    out = tmp_path / "inv.csv"
    cases = [
        (platform_env(standin, "wrong-token"), "vimeo:", "refused the token (VIDEOFERRY_VIMEO_TOKEN)"),
        (platform_env(standin, "no-files"), "vimeo:", "lacks the scope(s) video_files"),
        ({}, "vimeo:", "VIDEOFERRY_VIMEO_TOKEN is not set"),
        (
            platform_env(standin),
            "vimeo:album/3",
            "is not a platform source: expected vimeo:, vimeo:folder/<id>",
        ),
        (platform_env(standin), "vimeo:folder/99", "no folder 99"),
    ]
    for env, source, message in cases:
        code, _, stderr = run_inventory(env, source, "--out", str(out))
        assert (code, message in stderr) == (2, True), (source, stderr)
        assert "wrong-token" not in stderr
    control.configure(plan="basic")
    code, _, stderr = run_inventory(platform_env(standin), "vimeo:", "--out", str(out))
    assert code == 2 and "plan ('basic', as GET /me says) gives no download links" in stderr
    assert not out.exists()


def test_a_listing_that_cannot_finish_exits_1_and_writes_nothing(
    vimeo_standin: StandinFixture, tmp_path: Path
) -> None:
    standin, control = vimeo_standin
    videos: list[dict[str, Any]] = [{"id": str(i), "name": f"v{i}"} for i in range(1, 131)]
    videos[120]["broken"] = {"privacy": "everyone"}
    control.seed(videos=videos)
    out = tmp_path / "inv.csv"
    code, _, stderr = run_inventory(platform_env(standin), "vimeo:", "--out", str(out), "--no-chapters")
    assert code == 1
    assert "vimeo page 2 of the account's videos, field data[20].privacy: expected dict" in stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_standin_command_prints_its_address_and_token_first(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "videoferry.flows.cli", "standin", "wistia", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["platform"] == "wistia" and first["base_url"].startswith("http://127.0.0.1:")
        env = {"VIDEOFERRY_WISTIA_TOKEN": first["token"], "VIDEOFERRY_WISTIA_API_URL": first["base_url"]}
        code, stdout, stderr = run_inventory(env, "wistia:", "--out", str(tmp_path / "x.csv"))
        assert code == 0 and "listed 0 videos from wistia:" in stdout, stderr
    finally:
        proc.terminate()
        proc.wait(timeout=15)

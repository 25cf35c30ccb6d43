"""After a move out of Mux, Cloudflare Stream, api.video and Bunny Stream (real loopback stand-ins into the
emulator), as a user types it: `check <source>` and `check <source> --playable` (durations from the
platform's listing), `links` (each source's player URL; Mux's by its playback ids) and `rewrite-embeds`
(each platform's player and stream URLs replaced, images listed, a second run changes nothing)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from emulator.control import Workspace
from emulator.platforms.server import Standin, StandinControl
from tests.fixtures.platforms import platform_env
from tests.fixtures.takeout import make_takeout
from tests.flows.helpers import cli_env, run_cli

Fixture = tuple[Standin, StandinControl]
#: A prepared file (Mux master, Cloudflare MP4) looked for every 50 ms, at most 60 s.
QUICK_PREPARE = {"VIDEOFERRY_PREPARE_INTERVAL": "0.05", "VIDEOFERRY_PREPARE_BOUND": "60"}


def _clip(make: Callable[..., Path], name: str) -> str:
    return base64.b64encode(make(1.0, name=name).read_bytes()).decode()


def _migrate(ws: Workspace, env: dict[str, str], source: str, tmp: Path) -> None:
    args = ["migrate", source, "--parent-id", ws.project_id, "--ledger", str(tmp / "ledger.db")]
    done = run_cli([*args, "--wait-timeout", "60", "--transfers", "2"], env, cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr


def _check(ws: Workspace, env: dict[str, str], source: str, tmp: Path, *extra: str) -> Any:
    args = ["check", source, "--parent-id", ws.project_id, "--ledger", str(tmp / "ledger.db"), *extra]
    return run_cli(args, env, cwd=tmp)


def _lines(stdout: str) -> dict[str, str]:
    """The check's item lines by key."""
    return {line.split(" ", 2)[1]: line for line in stdout.splitlines() if line[:2] in ("= ", "* ", "- ")}


#: Per platform: the source, the stand-in's seed (two videos of 1 s), each item's key, and the page of a
#: site that embeds them (with {0} and {1} the two videos' player ids) and what stays listed.
CASES: dict[str, dict[str, Any]] = {
    "mux": {
        "source": "mux:",
        "seed": lambda clip: {
            "assets": [
                {"id": "m1", "meta": {"title": "One"}, "content_b64": clip("m1.mp4")},
                {"id": "m2", "meta": {"title": "Two"}, "policy": "signed", "content_b64": clip("m2.mp4")},
            ]
        },
        "keys": ("mux:m1", "mux:m2"),
        "embed": "https://player.mux.com/pbm1",
        "page": (
            '<iframe src="https://player.mux.com/pbm1?metadata-video-title=One"></iframe>\n'
            '<a href="https://stream.mux.com/pbm1.m3u8">HLS</a>\n'
            "static: https://stream.mux.com/pbm1/high.mp4\n"
            '<iframe src="https://player.mux.com/pbm2?playback-token=eyJhbGciOiJSUzI1NiJ9.c2lnbmVk.c2ln">'
            "</iframe>\n"
            '<img src="https://image.mux.com/pbm1/thumbnail.jpg?time=2">\n'
        ),
        "replaced": [("embed", 0), ("play", 0), ("play", 0), ("embed", 1)],
        "listed": ["https://image.mux.com/pbm1/thumbnail.jpg"],
        "gone": ["player.mux.com", "stream.mux.com"],
    },
    "cloudflare": {
        "source": "cloudflare:",
        "seed": lambda clip: {
            "videos": [
                {"uid": "c1", "name": "One", "content_b64": clip("c1.mp4")},
                {"uid": "c2", "name": "Two", "content_b64": clip("c2.mp4")},
            ]
        },
        "keys": ("cloudflare:c1", "cloudflare:c2"),
        "embed": "https://iframe.videodelivery.net/c1",
        "page": (
            '<iframe src="https://iframe.videodelivery.net/c1?autoplay=true"></iframe>\n'
            '<iframe src="https://customer-f33zs165nr7gyfy4.cloudflarestream.com/c2/iframe"></iframe>\n'
            "HLS: https://customer-f33zs165nr7gyfy4.cloudflarestream.com/c1/manifest/video.m3u8\n"
            '<img src="https://customer-f33zs165nr7gyfy4.cloudflarestream.com/c2/thumbnails/thumbnail.jpg">\n'
        ),
        "replaced": [("embed", 0), ("embed", 1), ("play", 0)],
        "listed": ["https://customer-f33zs165nr7gyfy4.cloudflarestream.com/c2/thumbnails/thumbnail.jpg"],
        "gone": ["videodelivery.net", "c2/iframe", "manifest"],
    },
    "apivideo": {
        "source": "apivideo:",
        "seed": lambda clip: {
            "videos": [
                {"videoId": "a1", "title": "One", "content_b64": clip("a1.mp4")},
                {"videoId": "a2", "title": "Two", "content_b64": clip("a2.mp4")},
            ]
        },
        "keys": ("apivideo:a1", "apivideo:a2"),
        "embed": "https://embed.api.video/vod/a1",
        "page": (
            '<iframe src="https://embed.api.video/vod/a1"></iframe>\n'
            "Watch it: https://embed.api.video/vod/a2#t=3\n"
        ),
        "replaced": [("embed", 0), ("embed", 1)],
        "listed": [],
        "gone": ["api.video"],
    },
    "bunny": {
        "source": "bunny:4242",
        "seed": lambda clip: {
            "videos": [
                {"guid": "b1", "title": "One", "content_b64": clip("b1.mp4")},
                {"guid": "b2", "title": "Two", "content_b64": clip("b2.mp4")},
            ]
        },
        "keys": ("bunny:4242/b1", "bunny:4242/b2"),
        "embed": "https://iframe.mediadelivery.net/embed/4242/b1",
        "page": (
            '<iframe src="https://iframe.mediadelivery.net/embed/4242/b1?autoplay=false"></iframe>\n'
            "[Two](https://player.mediadelivery.net/play/4242/b2)\n"
        ),
        "replaced": [("embed", 0), ("embed", 1)],
        "listed": [],
        "gone": ["mediadelivery.net"],
    },
}


@pytest.mark.parametrize("platform", list(CASES))
def test_check_links_and_embeds_after_a_move_from_the_platform(
    platform: str, request: pytest.FixtureRequest, tmp_path: Path, emu: Workspace, clip_factory: Any
) -> None:
    case = CASES[platform]
    standin, control = request.getfixturevalue(f"{platform}_standin")
    control.seed(**case["seed"](lambda name: _clip(clip_factory, name)))
    env = {**cli_env(emu), **platform_env(standin), **QUICK_PREPARE}
    source = case["source"]
    _migrate(emu, env, source, tmp_path)

    checked = _check(emu, env, source, tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert sorted(k for k, line in _lines(checked.stdout).items() if line.startswith("= ")) == list(
        case["keys"]
    )
    playable = _check(emu, env, source, tmp_path, "--playable")
    assert playable.returncode == 0, playable.stdout + playable.stderr
    for key in case["keys"]:
        line = _lines(playable.stdout)[key]
        if platform == "apivideo":  # its listing says no duration: said, not a finding
            assert "duration not compared: the platform's listing gives none" in line, line
        else:  # the listing's 1 s against the video's
            assert "plays: 1.0" in line and "the source's 1.00 s" in line, line
    assert "playable (--playable): 0 migrated video(s) do not play" in playable.stdout

    links = run_cli(["links", "--ledger", str(tmp_path / "ledger.db"), "--format", "json"], env, cwd=tmp_path)
    assert links.returncode == 0, links.stdout + links.stderr
    rows = {row["source"]: row for row in json.loads(links.stdout)}
    assert sorted(rows) == list(case["keys"])
    first, second = (rows[k] for k in case["keys"])
    assert first["source_embed"] == case["embed"]
    if platform == "mux":  # the signed playback id is not a secret; its token never was in the ledger
        assert second["source_embed"] == "https://player.mux.com/pbm2"

    site = tmp_path / "site"
    site.mkdir()
    page = site / "index.html"
    page.write_text(case["page"], encoding="utf-8")
    args = ["rewrite-embeds", str(site), "--ledger", str(tmp_path / "ledger.db")]
    dry = run_cli([*args, "--dry-run"], env, cwd=tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert page.read_text(encoding="utf-8") == case["page"]  # a dry run writes nothing
    done = run_cli(args, env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    text = page.read_text(encoding="utf-8")
    made = [(first, second)[n][f"{kind}_link"] for kind, n in case["replaced"]]
    assert all(link for link in made)
    found = sorted((text.index(link, 0), link) for link in set(made))
    assert len(found) == len(set(made))
    assert sum(text.count(link) for link in set(made)) == len(made), text
    for listed in case["listed"]:
        assert listed in text and listed in done.stderr  # left as it was, and named
    assert (
        f"{len(made)} URL(s) replaced, {len(case['listed'])} left as they were" in done.stdout + done.stderr
    )
    for gone in case["gone"]:
        assert gone not in text, text
    assert "playback-token" not in text + done.stdout + done.stderr  # the token went with the old URL
    again = run_cli(args, env, cwd=tmp_path)
    assert again.returncode == 0 and page.read_text(encoding="utf-8") == text  # a rerun changes nothing
    assert standin.token not in checked.stdout + playable.stdout + links.stdout + done.stdout + done.stderr


def test_check_playable_names_a_mux_video_whose_duration_disagrees(
    tmp_path: Path, emu: Workspace, mux_standin: Fixture, clip_factory: Any
) -> None:
    standin, control = mux_standin
    clip = _clip(clip_factory, "m1.mp4")
    control.seed(
        assets=[
            {"id": "m1", "meta": {"title": "Whole"}, "content_b64": clip},
            # Mux says a minute; the master that came is the 1 s clip (a cut-off master, a wrong asset)
            {
                "id": "m2",
                "meta": {"title": "Cut off"},
                "duration": 60.0,
                "content_b64": _clip(clip_factory, "m2.mp4"),
            },
        ]
    )
    env = {**cli_env(emu), **platform_env(standin), **QUICK_PREPARE}
    _migrate(emu, env, "mux:", tmp_path)
    plain = _check(emu, env, "mux:", tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr  # the bytes match what was sent
    checked = _check(emu, env, "mux:", tmp_path, "--playable")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = _lines(checked.stdout)
    assert lines["mux:m1"].startswith("= ")
    assert lines["mux:m2"].startswith('* mux:m2 "Cut off"')
    assert "differs in playable" in lines["mux:m2"]
    assert (
        "duration 1.0" in lines["mux:m2"]
        and "the source's 60.00 s (more than 1.20 s apart)" in lines["mux:m2"]
    )
    assert "playable (--playable): 1 migrated video(s) do not play" in checked.stdout


def test_check_a_youtube_takeout_as_it_is(tmp_path: Path, emu: Workspace, clip_factory: Any) -> None:
    folder = make_takeout(
        tmp_path / "export",
        clip_factory,
        [("vidA1234567", "One", "Public"), ("vidB1234567", "Two", "Private")],
    )
    env = cli_env(emu)
    _migrate(emu, env, f"youtube-takeout:{folder}", tmp_path)
    checked = _check(emu, env, f"youtube-takeout:{folder}", tmp_path, "--playable")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = _lines(checked.stdout)
    assert sorted(lines) == ["youtube:vidA1234567", "youtube:vidB1234567"]
    assert all("plays: 1.0" in line and "the source's 1.00 s" in line for line in lines.values()), lines
    missing = _check(emu, env, f"youtube-takeout:{tmp_path / 'nowhere'}", tmp_path)
    assert missing.returncode == 2, missing.stdout + missing.stderr  # configuration to fix, said
    assert "nowhere" in missing.stderr

"""videoferry links and rewrite-embeds through the command line, on a real migration into the emulator:
platform items (their `key` column), a URL source, a file, and an item that failed."""

from __future__ import annotations

import codecs
import csv
import functools
import http.server
import io
import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.flows.helpers import api_calls, cli_env, free_port, options, run_cli, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.tasks.service import run_limiter


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """No access log on the test's stderr."""


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server of a folder (the old file host): its base URL and folder."""
    folder = tmp_path / "served"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Migrated:
    """The migration the tests start from: its ledger, the file URL base, the new videos by item key."""

    ledger: Path
    base: str
    videos: dict[str, dict[str, str]]  # key -> {id, play_link, embed_link}


YOUTUBE = "dQw4w9WgXcQ"


@pytest.fixture()
def migrated(tmp_path: Path, emu: Workspace, clip_factory, served: tuple[str, Path]) -> Migrated:
    base, folder = served
    clip = clip_factory(1.0, name="old-lecture.mp4")
    shutil.copy(clip, folder / "old-lecture.mp4")
    rows = [
        {"key": "vimeo:76979871", "source": str(clip_factory(1.0)), "title": "From Vimeo"},
        {"key": f"youtube:{YOUTUBE}", "source": str(clip_factory(1.0)), "title": "From YouTube"},
        {"key": "wistia:abc123xyz", "source": str(clip_factory(1.0)), "title": "From Wistia"},
        {"key": "", "source": f"{base}/old-lecture.mp4?sig=SECRET", "title": "From a URL"},
        {"key": "", "source": str(clip_factory(1.0, name="plain.mp4")), "title": "A file"},
        {"key": "vimeo:5555", "source": f"{base}/no-such-file.mp4", "title": "Never plays"},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 1  # the last row's URL answers 404: the service's import fails
    ledger = tmp_path / "ledger.db"
    from videoferry.state.ledger import Ledger

    book = Ledger.open(ledger, create=False)
    try:
        ids = {i.key: i.video_id for i in book.items() if i.state in ("done", "finished")}
    finally:
        book.close()
    assert len(ids) == 5
    videos: dict[str, dict[str, str]] = {}
    settings = settings_for(emu)  # counted by the migrate run's limiter, as the tool's own calls
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger))) as client:
        for key, video_id in ids.items():
            assert video_id is not None
            video = client.videos.get(video_id)
            assert video.play_link and video.embed_link
            videos[key] = {"id": video.id, "play_link": video.play_link, "embed_link": video.embed_link}
    return Migrated(ledger, base, videos)


def test_links_writes_every_done_item_in_each_format(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, migrated: Migrated
) -> None:
    env = cli_env(emu)
    mark = time.time()
    done = run_cli(["links", "--ledger", str(migrated.ledger)], env)
    calls = api_calls(emu_control, emu, since=mark)
    assert [c["method"] for c in calls] == ["GET"]  # one list call for the 5 videos of one parent: no GET
    assert done.returncode == 1, done.stderr  # one item is not done: left out, and said
    assert "left out: 1 item(s) error" in done.stderr or "left out: 1 item(s) failed" in done.stderr
    assert "links: 5 video(s)" in done.stderr
    rows = {r["source"]: r for r in csv.DictReader(io.StringIO(done.stdout))}
    assert set(rows) == {
        "vimeo:76979871",
        f"youtube:{YOUTUBE}",
        "wistia:abc123xyz",
        f"{migrated.base}/old-lecture.mp4",
        str(tmp_path / "clips" / "plain.mp4"),
    }
    vimeo = rows["vimeo:76979871"]
    assert vimeo["source_page"] == "https://vimeo.com/76979871"
    assert vimeo["source_embed"] == "https://player.vimeo.com/video/76979871"
    assert vimeo["title"] == "From Vimeo"
    for row in rows.values():
        new = migrated.videos[row["key"]]
        assert (row["video_id"], row["play_link"], row["embed_link"]) == (
            new["id"],
            new["play_link"],
            new["embed_link"],
        )
    assert rows[f"{migrated.base}/old-lecture.mp4"]["source_page"] == f"{migrated.base}/old-lecture.mp4"
    assert rows[str(tmp_path / "clips" / "plain.mp4")]["source_page"] == ""
    assert "SECRET" not in done.stdout + done.stderr

    out = tmp_path / "links.json"
    as_json = run_cli(["links", "--ledger", str(migrated.ledger), "--format", "json", "--out", str(out)], env)
    assert as_json.returncode == 1 and as_json.stdout == ""
    assert {r["source"] for r in json.loads(out.read_text())} == set(rows)


def _nginx_entries(text: str) -> dict[str, str]:
    """The map block's entries, read as nginx reads them: `map $host$uri $var { default ""; "k" "v"; }`."""
    match = re.fullmatch(r"(?:#[^\n]*\n)*map \$host\$uri \$videoferry_link \{\n(.*)\}\n", text, re.S)
    assert match is not None, text
    entries: dict[str, str] = {}
    for line in match.group(1).splitlines():
        parts = re.fullmatch(r'    ("[^"\\$;{}\s]*"|default) ("[^"\\$;{}\s]*");', line)
        assert parts is not None, line
        key, value = (p.strip('"') for p in parts.groups())
        assert key not in entries
        entries[key] = value
    return entries


def test_redirect_maps_send_each_old_address_to_its_new_link(emu: Workspace, migrated: Migrated) -> None:
    env = cli_env(emu)
    nginx = run_cli(["links", "--ledger", str(migrated.ledger), "--format", "nginx"], env)
    entries = _nginx_entries(nginx.stdout)
    vimeo = migrated.videos["vimeo:76979871"]
    assert entries.pop("default") == ""
    assert entries["vimeo.com/76979871"] == vimeo["play_link"]
    assert entries["player.vimeo.com/video/76979871"] == vimeo["embed_link"]
    assert entries[f"www.youtube.com/embed/{YOUTUBE}"] == migrated.videos[f"youtube:{YOUTUBE}"]["embed_link"]
    url_video = next(v for k, v in migrated.videos.items() if not k.startswith(("vimeo", "you", "wis")))
    host = migrated.base.removeprefix("http://").split(":")[0]  # nginx's $host: no port
    assert entries[f"{host}/old-lecture.mp4"] == url_video["play_link"]

    apache = run_cli(["links", "--ledger", str(migrated.ledger), "--format", "apache"], env)
    lines = [line for line in apache.stdout.splitlines() if not line.startswith("#")]
    pairs = dict(line.split(" ") for line in lines)  # RewriteMap txt: `key value`, one space, no blanks
    assert pairs == entries


def _write(path: Path, text: str, encoding: str = "utf-8", bom: bytes = b"", mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bom + text.encode(encoding))
    path.chmod(mode)
    return path


def test_rewrite_embeds_dry_run_then_writes_each_file_once(
    tmp_path: Path, emu: Workspace, migrated: Migrated
) -> None:
    site = tmp_path / "site"
    vimeo = migrated.videos["vimeo:76979871"]
    youtube = migrated.videos[f"youtube:{YOUTUBE}"]
    wistia = migrated.videos["wistia:abc123xyz"]
    url_video = next(v for k, v in migrated.videos.items() if not k.startswith(("vimeo", "you", "wis")))
    html = _write(
        site / "index.html",
        '<p>Watch</p>\r\n<iframe src="https://player.vimeo.com/video/76979871?h=abc&amp;badge=0"></iframe>\r\n'
        f'<iframe src="//www.youtube.com/embed/{YOUTUBE}?rel=0"></iframe>\r\n'
        '<a href="https://vimeo.com/5555">not migrated</a>\r\n',
        bom=codecs.BOM_UTF8,
        mode=0o640,
    )
    markdown = _write(
        site / "notes" / "post.md",
        f"# Lekcja ✓\n\nSee [the talk](https://youtu.be/{YOUTUBE}?t=30), vimeo.com/76979871/ and\n"
        f"[the lecture]({migrated.base}/old-lecture.mp4?sig=SECRET).\n"
        f'<video src="{migrated.base}/old-lecture.mp4"></video>\n',
    )
    latin = _write(site / "plain.txt", "Vidéo: https://acme.wistia.com/medias/abc123xyz\n", "latin-1")
    untouched = _write(site / "style.css", "a { background: url(https://vimeo.com/76979871) }")
    before = {p: p.read_bytes() for p in (html, markdown, latin, untouched)}
    env = cli_env(emu)
    args = ["rewrite-embeds", str(site), "--ledger", str(migrated.ledger)]

    dry = run_cli([*args, "--dry-run"], env)
    assert dry.returncode == 0, dry.stderr
    assert {p: p.read_bytes() for p in before} == before  # a dry run writes nothing
    assert f'+<iframe src="{vimeo["embed_link"]}"></iframe>' in dry.stdout
    assert '-<iframe src="https://player.vimeo.com/video/76979871"></iframe>' in dry.stdout  # no query shown
    assert "SECRET" not in dry.stdout + dry.stderr
    assert "3 file(s), 3 would be changed; 6 URL(s) would be replaced, 2 left as they were" in dry.stdout

    real = run_cli(args, env)
    assert real.returncode == 0, real.stderr
    assert f"{html}:4: https://vimeo.com/5555: no migrated item vimeo:5555" in real.stderr
    assert f"{markdown}:5: {migrated.base}/old-lecture.mp4: in a <video> tag" in real.stderr
    assert "SECRET" not in real.stdout + real.stderr
    raw = html.read_bytes()
    assert (
        raw.startswith(codecs.BOM_UTF8) and raw.count(b"\r\n") == 4 and b"\n" not in raw.replace(b"\r\n", b"")
    )
    assert html.stat().st_mode & 0o777 == 0o640
    assert raw.decode("utf-8-sig") == (
        f'<p>Watch</p>\r\n<iframe src="{vimeo["embed_link"]}"></iframe>\r\n'
        f'<iframe src="{youtube["embed_link"]}"></iframe>\r\n'
        '<a href="https://vimeo.com/5555">not migrated</a>\r\n'
    )
    assert markdown.read_text("utf-8") == (
        f"# Lekcja ✓\n\nSee [the talk]({youtube['play_link']}), {vimeo['play_link']} and\n"
        f"[the lecture]({url_video['play_link']}).\n"
        f'<video src="{migrated.base}/old-lecture.mp4"></video>\n'
    )
    assert latin.read_bytes() == f"Vidéo: {wistia['play_link']}\n".encode("latin-1")
    assert untouched.read_bytes() == before[untouched]  # not an HTML, Markdown or text file
    assert not [p for p in site.rglob("*.tmp")]

    again = {p: p.read_bytes() for p in (html, markdown, latin)}
    second = run_cli(args, env)
    assert second.returncode == 0
    assert "3 file(s), 0 changed; 0 URL(s) replaced, 2 left as they were" in second.stdout
    assert {p: p.read_bytes() for p in again} == again

    missing = run_cli([*args[:2], str(tmp_path / "no-such.md"), *args[2:]], env)
    assert missing.returncode == 1  # one file could not be read: said, the others still rewritten
    assert f"error: {tmp_path / 'no-such.md'}: cannot read" in missing.stderr


def test_videos_apply_made_are_in_the_map_and_ids_in_any_notation_match(
    tmp_path: Path, emu: Workspace, emu_control, migrated: Migrated
) -> None:
    ops = write_inventory(
        tmp_path / "ops.csv",
        [
            {"op": "copy", "id": "dup", "target": "key:vimeo:76979871"},
            {
                "op": "concat",
                "id": "joined",
                "target": f"key:youtube:{YOUTUBE}",
                "append": "key:vimeo:76979871",
            },
            # a trim written back to the same video (the emulator's default) makes no new video: no row
            {
                "op": "cut",
                "id": "trimmed",
                "target": "key:wistia:abc123xyz",
                "trim": '[{"start": 0, "length": 0.5}]',
            },
        ],
    )
    env = cli_env(emu)
    applied = run_cli(["apply", str(ops), "--ledger", str(migrated.ledger)], env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    emu_control.set_variants(emu, ["ids-base58", "page-cap-10"])  # other notation, short pages
    done = run_cli(["links", "--ledger", str(migrated.ledger), "--format", "json"], env)
    assert done.returncode == 1, done.stderr  # the failed item is still left out
    rows = json.loads(done.stdout)
    assert len(rows) == 7
    made = {r["made_by"]: r for r in rows if r["made_by"].startswith("apply")}
    original = migrated.videos["vimeo:76979871"]["id"].replace("-", "")
    copy, concat = made["apply copy (op dup)"], made["apply concat (op joined)"]
    assert copy["source"].replace("-", "") == f"video:{original}"
    known = {v["play_link"] for v in migrated.videos.values()}
    assert copy["play_link"] and concat["play_link"] and not {copy["play_link"], concat["play_link"]} & known
    assert copy["video_id"] not in {v["id"] for v in migrated.videos.values()}
    assert "left out: 1 item(s)" in done.stderr and "gone" not in done.stderr
    assert set(made) == {"apply copy (op dup)", "apply concat (op joined)"}
    assert [r["made_by"] for r in rows if r["source"] == "wistia:abc123xyz"] == ["migrate"]


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_loads_the_map_and_redirects_an_old_address(
    tmp_path: Path, emu: Workspace, migrated: Migrated
) -> None:
    conf_dir = tmp_path / "nginx"
    (conf_dir / "logs").mkdir(parents=True)
    out = conf_dir / "videoferry-links.conf"
    done = run_cli(
        ["links", "--ledger", str(migrated.ledger), "--format", "nginx", "--out", str(out)], cli_env(emu)
    )
    assert out.exists(), done.stderr
    port = free_port()
    (conf_dir / "nginx.conf").write_text(
        "events {}\n"
        "http {\n"
        "    include videoferry-links.conf;\n"
        f"    server {{ listen 127.0.0.1:{port};\n"
        "        if ($videoferry_link) { return 301 $videoferry_link; } }\n"
        "}\n"
    )
    base = ["nginx", "-p", str(conf_dir), "-c", "nginx.conf", "-g", "pid nginx.pid; error_log stderr;"]
    tested = subprocess.run([*base, "-t"], capture_output=True, text=True, timeout=30)
    assert tested.returncode == 0, tested.stderr
    server = subprocess.Popen(
        [*base[:-1], "pid nginx.pid; error_log stderr; daemon off;"], stderr=subprocess.PIPE
    )
    try:
        url_video = next(v for k, v in migrated.videos.items() if not k.startswith(("vimeo", "you", "wis")))
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/old-lecture.mp4?sig=anything", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "nginx did not answer within 20 s"
                time.sleep(0.1)
        assert answer.status_code == 301
        assert answer.headers["location"] == url_video["play_link"]
        other = httpx.get(f"http://127.0.0.1:{port}/not-migrated.mp4", timeout=2)
        assert other.status_code != 301 and "location" not in other.headers  # not in the map: not redirected
    finally:
        server.terminate()
        server.wait(timeout=10)

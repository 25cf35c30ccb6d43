"""`videoferry migrate` straight out of the Vimeo and Wistia stand-ins (real loopback servers) into the
emulator: an inventory of `vimeo:<id>` rows, the `vimeo:` / `wistia:` sources, reruns by the source's id,
and the faults of a source (a video deleted before its create, a link expired, a platform gone)."""

from __future__ import annotations

import base64
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.control import EmulatorControl, Workspace
from emulator.platforms.server import Standin, StandinControl
from tests.fixtures.kill_rerun import kill_then_rerun, ledger_count
from tests.fixtures.platforms import platform_env
from tests.flows.helpers import cli_env, creates, run_cli, write_inventory

Fixture = tuple[Standin, StandinControl]


def _clip(make: Callable[..., Path], name: str) -> str:
    return base64.b64encode(make(1.0, name=name).read_bytes()).decode()


def _rendition(make: Callable[..., Path], name: str, quality: str = "source") -> dict[str, Any]:
    kind = "source" if quality == "source" else "video/mp4"
    return {
        "quality": quality,
        "rendition": quality,
        "type": kind,
        "width": 160,
        "height": 120,
        "content_b64": _clip(make, name),
    }


def _migrate(ws: Workspace, env: dict[str, str], source: str, tmp: Path, *extra: str) -> Any:
    args = [
        "migrate",
        source,
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(tmp / "ledger.db"),
        "--wait-timeout",
        "60",
        "--transfers",
        "2",
        *extra,
    ]
    return run_cli(args, {**cli_env(ws), **env}, cwd=tmp)


def test_inventory_of_vimeo_ids_migrates_by_url_import(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {
                "id": "11",
                "name": "Keynote",
                "tags": ["conf"],
                "renditions": [_rendition(clip_factory, "a.mp4")],
            },
            {"id": "12", "name": "Panel", "renditions": [_rendition(clip_factory, "b.mp4", "720p")]},
        ]
    )
    inventory = write_inventory(
        tmp_path / "inv.csv",
        [
            {"source": "vimeo:11", "key": "vimeo:11", "title": "Keynote", "tags": "conf"},
            {"source": "vimeo:12", "key": "vimeo:12", "title": "Panel"},
        ],
    )
    done = _migrate(emu, platform_env(standin), str(inventory), tmp_path, "--report", str(tmp_path / "rep"))
    assert done.returncode == 0, done.stderr + done.stdout
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == ["Keynote", "Panel"]
    # The signed links (exp=...&sig=...) reach no report file and no text of the ledger.
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        dumped = "\n".join(db.iterdump())
    reports = "".join(p.read_text(errors="replace") for p in (tmp_path / "rep").rglob("*") if p.is_file())
    assert "sig=" not in dumped + reports and "/_download/" not in dumped + reports
    assert "bytes from vimeo: the original file" in dumped
    assert "progressive MP4 720p" in dumped  # Panel has no original: said so
    assert "bytes from vimeo: the original file" in reports  # the report's source_file column
    assert all(v["status"] == "done" for v in videos)
    keys = {row[0] for row in sqlite3.connect(tmp_path / "ledger.db").execute("select key from items")}
    assert keys == {"vimeo:11", "vimeo:12"}
    assert standin.token not in done.stdout + done.stderr
    assert "sig=" not in done.stdout + done.stderr


def _vimeo_video(make: Callable[..., Path], vid: str, name: str, **more: Any) -> dict[str, Any]:
    return {"id": vid, "name": name, "renditions": [_rendition(make, f"{vid}.mp4")], **more}


def test_vimeo_account_migrates_by_folder_map_and_a_rerun_resumes_by_id(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        folders=[{"id": "7", "name": "Talks"}],
        videos=[
            _vimeo_video(clip_factory, "21", "Opening", folder="7", tags=["conf"]),
            _vimeo_video(clip_factory, "22", "Loose", chapters=[{"title": "Intro", "timecode": 0}]),
            _vimeo_video(clip_factory, "23", "Secret", privacy="password"),
        ],
    )
    folder_map = tmp_path / "folders.csv"
    folder_map.write_text(f"folder,parent_id\nTalks,{emu.folder_id}\n")
    env = platform_env(standin)
    first = _migrate(emu, env, "vimeo:", tmp_path, "--folder-map", str(folder_map))
    assert first.returncode == 0, first.stderr + first.stdout
    videos = {v["title"]: v for v in emu_control.videos(emu)}
    assert sorted(videos) == ["Loose", "Opening", "Secret"]
    assert videos["Opening"]["folder_id"] == emu.folder_id  # the mapped folder
    assert videos["Opening"]["tags"] == ["conf"]
    assert [c["title"] for c in videos["Loose"]["chapters"]["items"]] == ["Intro"]
    assert "have a privacy the service has no match for" in first.stdout + first.stderr

    # Next week: one deleted at the source, one added; the rerun creates the new one only.
    control.delete("22")
    control.seed(videos=[_vimeo_video(clip_factory, "24", "Added")])
    mark = time.time()
    again = _migrate(emu, env, "vimeo:", tmp_path, "--folder-map", str(folder_map))
    assert again.returncode == 0, again.stderr + again.stdout
    assert len(creates(emu_control, emu, since=mark)) == 1
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["Added", "Loose", "Opening", "Secret"]
    output = again.stdout + again.stderr
    assert "1 videos migrated earlier are no longer listed at vimeo:" in output and "vimeo:22" in output
    assert standin.token not in output


def test_wistia_project_migrates(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, wistia_standin: Fixture, clip_factory
) -> None:
    standin, control = wistia_standin
    clip = _clip(clip_factory, "w.mp4")
    control.seed(
        projects=[{"hashed_id": "proj1", "name": "Web"}],
        medias=[
            {
                "hashed_id": "abc1",
                "name": "Welcome",
                "project": "proj1",
                "assets": [{"type": "OriginalFile", "width": 160, "height": 120, "content_b64": clip}],
            },
            {"hashed_id": "img1", "name": "Logo", "project": "proj1", "type": "Image"},
        ],
    )
    done = _migrate(emu, platform_env(standin), "wistia:project/proj1", tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert [v["title"] for v in emu_control.videos(emu)] == ["Welcome"]
    assert "left out 1 medias that are not videos (images, audio, documents): img1 (Image)" in done.stdout


def test_via_tus_streams_through_and_a_kill_9_then_rerun_makes_one_video_each(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[_vimeo_video(clip_factory, str(70 + i), f"Talk {i}") for i in range(4)])
    env = {**cli_env(emu), **platform_env(standin)}
    ledger = tmp_path / "ledger.db"
    args = [
        "migrate",
        "vimeo:",
        "--via",
        "tus",
        "--parent-id",
        emu.project_id,
        "--ledger",
        str(ledger),
        "--wait-timeout",
        "120",
        "--transfers",
        "2",
        "--chunk-mib",
        "1",
    ]
    emu_control.set_faults(emu, [{"kind": "bandwidth", "bytes_per_second": 20_000}], seed=1)
    rerun = kill_then_rerun(
        args, env, ledger, ["uploading"], before_rerun=lambda: emu_control.clear_faults(emu)
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    titles = sorted(v["title"] for v in emu_control.videos(emu))
    assert titles == [f"Talk {i}" for i in range(4)]  # one video per source video
    assert ledger_count(ledger, "finished") == 4
    with sqlite3.connect(ledger) as db:
        notes = [m for (m,) in db.execute("select message from events where message like 'bytes from%'")]
    assert notes and all("original file" in n for n in notes)
    assert not any("sig=" in n for n in notes)


def test_dry_run_counts_bytes_and_duration_per_target_folder(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        folders=[{"id": "8", "name": "Talks"}],
        videos=[
            {
                "id": "81",
                "name": "A",
                "folder": "8",
                "duration": 90,
                "renditions": [{"quality": "source", "rendition": "source", "type": "source", "size": 3000}],
            },
            {
                "id": "82",
                "name": "B",
                "duration": 30,
                "renditions": [
                    {
                        "quality": "hd",
                        "rendition": "720p",
                        "type": "video/mp4",
                        "width": 1280,
                        "height": 720,
                        "size": 2000,
                    },
                    {
                        "quality": "sd",
                        "rendition": "360p",
                        "type": "video/mp4",
                        "width": 640,
                        "height": 360,
                        "size": 500,
                    },
                ],
            },
        ],
    )
    folder_map = tmp_path / "folders.csv"
    folder_map.write_text(f"folder,parent_id\n8,{emu.folder_id}\n")
    run = _migrate(
        emu, platform_env(standin), "vimeo:", tmp_path, "--folder-map", str(folder_map), "--dry-run"
    )
    assert run.returncode == 0, run.stderr + run.stdout
    out = run.stdout
    assert f"into {emu.folder_id}: 1 videos, 1 to migrate (3.0 KB, 1:30 long), 0 already done" in out
    assert f"into {emu.project_id}: 1 videos, 1 to migrate (2.0 KB, 0:30 long), 0 already done" in out
    assert "posters and captions are not carried" in out
    assert "missing" not in out  # a platform video is not checked as a file
    assert emu_control.videos(emu) == []
    downloads = [r for r in control.log() if r["path"].startswith("/_download/")]
    assert downloads == []  # no link is resolved by a dry run


def test_check_and_status_take_the_source_forms(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(videos=[_vimeo_video(clip_factory, "91", "One"), _vimeo_video(clip_factory, "92", "Two")])
    env = {**cli_env(emu), **platform_env(standin)}
    done = _migrate(emu, platform_env(standin), "vimeo:", tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    ledger = str(tmp_path / "ledger.db")
    checked = run_cli(["check", "vimeo:", "--parent-id", emu.project_id, "--ledger", ledger], env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    status = run_cli(["status", "vimeo:", "--ledger", ledger], env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "vimeo: 2 items in the ledger: 2 finished" in status.stdout
    other = run_cli(["status", "wistia:project/x1", "--ledger", ledger], env)
    assert other.returncode == 1 and "wistia: 0 items in the ledger: none" in other.stdout
    bad = run_cli(["status", "dailymotion:", "--ledger", ledger], env)
    assert bad.returncode == 2 and "is not a source" in bad.stderr
    control.delete("92")
    missing = run_cli(["check", "vimeo:", "--parent-id", emu.project_id, "--ledger", ledger], env)
    assert missing.returncode == 1  # the video of a source video deleted since is named, not dropped
    assert "ledger's vimeo:92, not in this inventory" in missing.stdout


def test_captions_are_attached_as_materials_behind_the_flag(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    vimeo_standin: Fixture,
    wistia_standin: Fixture,
    clip_factory,
) -> None:
    vimeo, vimeo_control = vimeo_standin
    tracks = [
        {"language": "en", "type": "captions", "text": "WEBVTT\n\n00:00.000 --> 00:01.000\nHello\n"},
        {"language": "fr", "type": "subtitles", "text": "WEBVTT\n\n00:00.000 --> 00:01.000\nBonjour\n"},
    ]
    vimeo_control.seed(videos=[_vimeo_video(clip_factory, "95", "Captioned", texttracks=tracks)])
    wistia, wistia_control = wistia_standin
    clip = _clip(clip_factory, "w2.mp4")
    wistia_control.seed(
        medias=[
            {
                "hashed_id": "cap1",
                "name": "Wistia captioned",
                "assets": [{"type": "OriginalFile", "width": 160, "height": 120, "content_b64": clip}],
                "captions": [{"language": "eng", "text": "1\n00:00:00,000 --> 00:00:01,000\nHi\n"}],
            },
        ]
    )
    folder = tmp_path / "captions"
    env = {**platform_env(vimeo), **platform_env(wistia)}
    dry = _migrate(emu, env, "vimeo:", tmp_path, "--captions", str(folder), "--dry-run")
    assert dry.returncode == 0 and not folder.exists()  # a dry run fetches nothing
    first = _migrate(emu, env, "vimeo:", tmp_path, "--captions", str(folder))
    assert first.returncode == 0, first.stderr + first.stdout
    assert "captions: 2 files of 1 videos" in first.stdout + first.stderr
    second = _migrate(emu, env, "wistia:", tmp_path, "--captions", str(folder))
    assert second.returncode == 0, second.stderr + second.stdout
    materials = {
        v["title"]: sorted(m["original_name"] for m in v.get("additional_materials") or [])
        for v in emu_control.videos(emu)
    }
    assert materials == {
        "Captioned": ["en-captions-1.vtt", "fr-subtitles-2.vtt"],
        "Wistia captioned": ["eng-1.srt"],
    }
    assert (folder / "vimeo-95" / "fr-subtitles-2.vtt").read_text() == tracks[1]["text"]


def test_wistia_by_url_import_a_kill_9_then_rerun_makes_one_video_each(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, wistia_standin: Fixture, clip_factory
) -> None:
    standin, control = wistia_standin
    medias = [
        {
            "hashed_id": f"k{i}",
            "name": f"Webinar {i}",
            "assets": [
                {
                    "type": "OriginalFile",
                    "width": 160,
                    "height": 120,
                    "content_b64": _clip(clip_factory, f"k{i}.mp4"),
                }
            ],
        }
        for i in range(4)
    ]
    control.seed(medias=medias)
    env = {**cli_env(emu), **platform_env(standin)}
    ledger = tmp_path / "ledger.db"
    args = [
        "migrate",
        "wistia:",
        "--parent-id",
        emu.project_id,
        "--ledger",
        str(ledger),
        "--wait-timeout",
        "120",
        "--transfers",
        "2",
    ]
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 400, "rate": 1.0}], seed=2)
    rerun = kill_then_rerun(
        args, env, ledger, ["creating", "processing"], before_rerun=lambda: emu_control.clear_faults(emu)
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert sorted(v["title"] for v in emu_control.videos(emu)) == [f"Webinar {i}" for i in range(4)]
    assert ledger_count(ledger, "finished") == 4


def test_an_inventory_written_by_videoferry_inventory_migrates(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            _vimeo_video(clip_factory, "97", "Listed first", chapters=[{"title": "Start", "timecode": 0}]),
            _vimeo_video(clip_factory, "98", "Then migrated", tags=["a", "b"]),
        ]
    )
    env = {**cli_env(emu), **platform_env(standin)}
    out = tmp_path / "vimeo.jsonl"
    listed = run_cli(["inventory", "vimeo:", "--out", str(out)], env)
    assert listed.returncode == 0, listed.stderr
    done = _migrate(emu, platform_env(standin), str(out), tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    videos = {v["title"]: v for v in emu_control.videos(emu)}
    assert sorted(videos) == ["Listed first", "Then migrated"]
    assert videos["Then migrated"]["tags"] == ["a", "b"]
    assert [c["title"] for c in videos["Listed first"]["chapters"]["items"]] == ["Start"]

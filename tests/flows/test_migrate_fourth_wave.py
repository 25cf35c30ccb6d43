"""`videoferry migrate` straight out of the Mux, Cloudflare Stream, api.video and Bunny Stream stand-ins (real
loopback servers) into the emulator: one video per source video, a rerun sends nothing, `status <source>`,
and each platform's own way to its file (Mux's master, Cloudflare's MP4 download, api.video's MP4 asset,
Bunny's original or MP4 fallback)."""

from __future__ import annotations

import base64
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from emulator.control import EmulatorControl, Workspace
from emulator.platforms.server import Standin, StandinControl
from tests.fixtures.kill_rerun import kill_then_rerun, ledger_count
from tests.fixtures.platforms import platform_env
from tests.flows.helpers import cli_env, creates, run_cli

Fixture = tuple[Standin, StandinControl]
#: A prepared file (Mux master, Cloudflare MP4) looked for every 50 ms, at most 60 s.
QUICK_PREPARE = {"VIDEOFERRY_PREPARE_INTERVAL": "0.05", "VIDEOFERRY_PREPARE_BOUND": "60"}


def _clip(make: Callable[..., Path], name: str) -> str:
    return base64.b64encode(make(1.0, name=name).read_bytes()).decode()


def _env(ws: Workspace, standin: Standin, **more: str) -> dict[str, str]:
    return {**cli_env(ws), **platform_env(standin), **QUICK_PREPARE, **more}


def _args(ws: Workspace, source: str, ledger: Path, *extra: str) -> list[str]:
    return [
        "migrate",
        source,
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(ledger),
        "--wait-timeout",
        "60",
        "--transfers",
        "2",
        *extra,
    ]


def _notes(ledger: Path) -> dict[str, str]:
    """Each item's latest `bytes from ...` note (which file was taken)."""
    with sqlite3.connect(ledger) as db:
        rows = db.execute("select key, message from events where message like 'bytes from%' order by rowid")
        return {key: message for key, message in rows}


def _secrets_absent(standin: Standin, ledger: Path, *outputs: str) -> None:
    with sqlite3.connect(ledger) as db:
        dumped = "\n".join(db.iterdump())
    text = dumped + "".join(outputs)
    assert standin.token not in text
    assert standin.base_url not in text  # no download link (nor the stand-in's address)


def test_mux_masters_are_fetched_and_one_not_ready_in_time_waits_for_a_later_run(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, mux_standin: Fixture, clip_factory
) -> None:
    standin, control = mux_standin
    control.seed(
        assets=[
            {"id": "m1", "meta": {"title": "Keynote"}, "content_b64": _clip(clip_factory, "m1.mp4")},
            {"id": "m2", "passthrough": "Panel", "content_b64": _clip(clip_factory, "m2.mp4")},
            {
                "id": "m3",
                "meta": {"title": "Private"},
                "policy": "signed",
                "content_b64": _clip(clip_factory, "m3.mp4"),
            },
        ]
    )
    ledger = tmp_path / "ledger.db"
    args = _args(emu, "mux:", ledger)
    # Masters never ready within a bound of 0.3 s: each item fails for this run only, nothing is sent.
    control.configure(prepare_reads=1_000_000)
    early = run_cli(args, _env(emu, standin, VIDEOFERRY_PREPARE_BOUND="0.3"), cwd=tmp_path)
    assert early.returncode == 1, early.stdout + early.stderr
    assert emu_control.videos(emu) == []
    assert ledger_count(ledger, "failed") == 3, early.stdout + early.stderr
    with sqlite3.connect(ledger) as db:
        errors = [
            m for (m,) in db.execute("select message from events where message like '%not ready after%'")
        ]
    assert errors and all("a later run takes it" in m for m in errors)

    control.configure(prepare_reads=1)
    done = run_cli(args, _env(emu, standin), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["Keynote", "Panel", "Private"]
    enabled = [e for e in control.log() if e["method"] == "PUT" and e["path"].endswith("/master-access")]
    assert {e["path"].split("/")[4] for e in enabled} == {"m1", "m2", "m3"}
    fetched = {e["path"] for e in control.log() if e["path"].startswith("/master/") and e["status"] == 200}
    assert fetched == {f"/master/{a}/master.mp4" for a in ("m1", "m2", "m3")}  # by the service, by URL
    notes = _notes(ledger)
    assert set(notes) == {"mux:m1", "mux:m2", "mux:m3"}
    assert all("bytes from mux: the original file (master)" in n for n in notes.values())
    assert "have a privacy the service has no match for" in done.stdout + done.stderr  # m3: signed only

    mark = time.time()
    again = run_cli(args, _env(emu, standin), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert creates(emu_control, emu, since=mark) == []  # a rerun sends nothing
    status = run_cli(["status", "mux:", "--ledger", str(ledger)], _env(emu, standin))
    assert status.returncode == 0 and "mux: 3 items in the ledger: 3 finished" in status.stdout
    _secrets_absent(standin, ledger, early.stdout, early.stderr, done.stdout, done.stderr)


def test_cloudflare_mp4_downloads_are_prepared_and_streamed_by_tus(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, cloudflare_standin: Fixture, clip_factory
) -> None:
    standin, control = cloudflare_standin
    control.seed(
        videos=[
            {"uid": "c1", "name": "One", "content_b64": _clip(clip_factory, "c1.mp4")},
            {"uid": "c2", "name": "Two", "content_b64": _clip(clip_factory, "c2.mp4")},
        ]
    )
    ledger = tmp_path / "ledger.db"
    dry = run_cli(_args(emu, "cloudflare:", ledger, "--dry-run"), _env(emu, standin), cwd=tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert f"into {emu.project_id}: 2 videos, 2 to migrate" in dry.stdout
    assert [e for e in control.log() if "/downloads" in e["path"]] == []  # nothing asked by a dry run

    done = run_cli(_args(emu, "cloudflare:", ledger, "--via", "tus"), _env(emu, standin), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["One", "Two"]
    asked = [e for e in control.log() if e["method"] == "POST" and e["path"].endswith("/downloads")]
    assert sorted(e["path"].split("/")[-2] for e in asked) == ["c1", "c2"]
    read = {e["path"] for e in control.log() if e["path"].startswith("/files/") and e["status"] == 200}
    assert read == {f"/files/{uid}/downloads/default.mp4" for uid in ("c1", "c2")}  # through this machine
    notes = _notes(ledger)
    assert all(
        "progressive MP4 default.mp4 (the platform offers no original file)" in n for n in notes.values()
    )
    status = run_cli(["status", "cloudflare:", "--ledger", str(ledger)], _env(emu, standin))
    assert status.returncode == 0 and "cloudflare: 2 items in the ledger: 2 finished" in status.stdout
    _secrets_absent(standin, ledger, done.stdout, done.stderr)


def test_cloudflare_kill_9_then_rerun_makes_one_video_each(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, cloudflare_standin: Fixture, clip_factory
) -> None:
    standin, control = cloudflare_standin
    control.seed(
        videos=[
            {"uid": f"k{i}", "name": f"Clip {i}", "content_b64": _clip(clip_factory, f"k{i}.mp4")}
            for i in range(4)
        ]
    )
    ledger = tmp_path / "ledger.db"
    args = _args(emu, "cloudflare:", ledger)
    env = _env(emu, standin)
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 400, "rate": 1.0}], seed=3)
    rerun = kill_then_rerun(
        args,
        env,
        ledger,
        ["creating", "processing"],
        before_rerun=lambda: emu_control.clear_faults(emu),
        cwd=tmp_path,
    )
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert sorted(v["title"] for v in emu_control.videos(emu)) == [f"Clip {i}" for i in range(4)]
    assert ledger_count(ledger, "finished") == 4


def test_apivideo_inventory_migrates_and_a_video_without_mp4_fails_alone(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, apivideo_standin: Fixture, clip_factory
) -> None:
    standin, control = apivideo_standin
    control.seed(
        videos=[
            {"videoId": "a1", "title": "One", "tags": ["x"], "content_b64": _clip(clip_factory, "a1.mp4")},
            {"videoId": "a2", "title": "Two", "mp4Support": False},
            {"videoId": "a3", "title": "Three", "content_b64": _clip(clip_factory, "a3.mp4")},
        ]
    )
    env = _env(emu, standin)
    out = tmp_path / "apivideo.csv"
    listed = run_cli(["inventory", "apivideo:", "--out", str(out)], env)
    assert listed.returncode == 0, listed.stderr
    ledger = tmp_path / "ledger.db"
    done = run_cli(_args(emu, str(out), ledger), env, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # one item failed; the others went on
    videos = {v["title"]: v for v in emu_control.videos(emu)}
    assert sorted(videos) == ["One", "Three"]
    assert videos["One"]["tags"] == ["x"]
    status = run_cli(["status", "apivideo:", "--ledger", str(ledger)], env)
    assert status.returncode == 1
    assert "apivideo:a2" in status.stdout and "uploaded without MP4 support" in status.stdout
    assert "apivideo: 3 items in the ledger: 1 failed, 2 finished" in status.stdout
    _secrets_absent(standin, ledger, done.stdout, done.stderr, status.stdout)


def test_bunny_takes_the_original_else_the_mp4_fallback(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, bunny_standin: Fixture, clip_factory
) -> None:
    standin, control = bunny_standin
    control.seed(
        videos=[
            {"guid": "b1", "title": "One", "content_b64": _clip(clip_factory, "b1.mp4")},
            {"guid": "b2", "title": "Two", "content_b64": _clip(clip_factory, "b2.mp4")},
        ]
    )
    ledger = tmp_path / "ledger.db"
    env = _env(emu, standin)
    args = _args(emu, "bunny:4242", ledger)
    done = run_cli(args, env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # The library stops keeping originals; a video added since comes by its highest MP4 fallback.
    control.seed(
        libraries=[{"id": "4242", "keep_original_files": False}],
        videos=[{"guid": "b3", "title": "Three", "content_b64": _clip(clip_factory, "b3.mp4")}],
    )
    mark = time.time()
    again = run_cli(args, env, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(creates(emu_control, emu, since=mark)) == 1  # only the new one
    assert sorted(v["title"] for v in emu_control.videos(emu)) == ["One", "Three", "Two"]
    notes = _notes(ledger)
    assert "the original file (original)" in notes["bunny:4242/b1"]
    assert "progressive MP4 play_720p.mp4" in notes["bunny:4242/b3"]
    status = run_cli(["status", "bunny:4242", "--ledger", str(ledger)], env)
    assert status.returncode == 0 and "bunny:4242: 3 items in the ledger: 3 finished" in status.stdout
    _secrets_absent(standin, ledger, done.stdout, done.stderr, again.stdout, again.stderr)


def test_captions_are_refused_for_a_platform_without_them(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, mux_standin: Fixture
) -> None:
    standin, control = mux_standin
    control.seed(assets=[{"id": "m1"}])
    args = _args(emu, "mux:", tmp_path / "ledger.db", "--captions", str(tmp_path / "captions"))
    refused = run_cli(args, _env(emu, standin), cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--captions: mux: has no captions to fetch (Vimeo and Wistia only)" in refused.stderr
    assert emu_control.videos(emu) == []
    assert control.log() == []  # refused before anything is listed

"""The first hour of a new user (issue 44): a base URL with /v1 appended, a wrong token, a rerun, the reports
and a prefix listed with --include '**', each as a person's command line meets it against the emulator."""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.flows.helpers import cli_env, clip_rows, run_cli, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger


def _commands(tmp: Path, ws: Workspace, inventory: Path) -> dict[str, list[str]]:
    """Every command that talks to the service, with the least a person gives it (each its own ledger)."""
    ops = tmp / "ops.csv"
    ops.write_text("op,target,title\nupdate,00000000-0000-0000-0000-000000000001,x\n")
    desired = tmp / "desired.yaml"
    desired.write_text("events: []\n")
    out = tmp / "out"

    def ledger(name: str) -> list[str]:
        return ["--ledger", str(tmp / f"{name}.db")]

    return {
        "migrate": ["migrate", str(inventory), "--parent-id", ws.project_id, *ledger("migrate")],
        "migrate --dry-run": ["migrate", str(inventory), "--parent-id", ws.project_id, "--dry-run"],
        "apply": ["apply", str(ops), *ledger("apply")],
        "apply --dry-run": ["apply", str(ops), "--dry-run", *ledger("apply-dry")],
        "archive": ["archive", "--project", ws.project_id, "--to", str(out / "archive"), *ledger("archive")],
        "backup": ["backup", "--project", ws.project_id, "--to", str(out / "backup"), *ledger("backup")],
        "check": ["check", str(inventory), *ledger("check")],
        "setup plan": ["setup", "plan", str(desired), *ledger("setup-plan")],
        "setup up": ["setup", "up", str(desired), *ledger("setup-up")],
        "setup drift": ["setup", "drift", str(desired), *ledger("setup-drift")],
    }


def _run_all(
    commands: dict[str, list[str]], env: dict[str, str]
) -> dict[str, subprocess.CompletedProcess[str]]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_cli, args, env, None, 120) for name, args in commands.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize(
    ("variable", "tail", "route"),
    [("VIDEOFERRY_API_URL", "/v1", "/v1/videos"), ("VIDEOFERRY_UPLOAD_URL", "/v2", "/v2/init")],
)
def test_an_address_with_a_version_appended_stops_every_command_naming_it(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    variable: str,
    tail: str,
    route: str,
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    base = emu.base_url if variable == "VIDEOFERRY_API_URL" else emu.upload_url
    env = cli_env(emu, **{variable: base + tail})
    mark = time.time()
    results = _run_all(_commands(tmp_path, emu, inventory), env)
    for name, result in results.items():
        said = result.stdout + result.stderr
        assert result.returncode == 2, f"{name}: {said}"
        # one line, naming the address, the route, the fix and the variable (a dry run shows its plan first)
        assert "dry-run" in name or said.strip().count("\n") == 0, f"{name}: {said}"
        assert f"{base}{tail} has no route {route}" in said, f"{name}: {said}"
        assert f"give the base URL, without {tail} ({base})" in said, f"{name}: {said}"
        assert variable in said, f"{name}: {said}"
        assert emu.token not in said
    # nothing reached the workspace (the probes carry no token), no video, no ledger
    assert emu_control.requests(emu.workspace_id, since=mark) == []
    assert emu_control.videos(emu) == []
    assert not [p.name for p in tmp_path.glob("*.db")]


def test_a_wrong_token_is_one_line_and_plans_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 9, metadata=False))
    ledger = tmp_path / "ledger.db"
    bad = "vf-wrong-0123456789abcdef"
    args = ["migrate", str(inventory), "--parent-id", emu.project_id, "--ledger", str(ledger)]
    result = run_cli(args, cli_env(emu, VIDEOFERRY_TOKEN=bad), timeout=120)
    said = result.stdout + result.stderr
    assert result.returncode == 2, said
    assert said.strip().count("\n") == 0, said
    assert "the service refused the token (VIDEOFERRY_TOKEN)" in said, said
    assert "planned" not in said and bad not in said
    assert not ledger.exists()  # nothing planned: the rerun with the right token starts clean
    assert emu_control.videos(emu) == []


def test_include_everything_on_a_prefix_refuses_what_is_not_a_video_before_creating_anything(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, s3_bucket: str
) -> None:
    from videoferry.connectors.s3 import shared_s3_client

    s3 = shared_s3_client()
    for i in range(2):
        s3.upload_file(str(clip_factory(1.0, name=f"talk-{i}.mp4")), s3_bucket, f"event/talk-{i}.mp4")
    s3.put_object(Bucket=s3_bucket, Key="event/notes.txt", Body=b"speaker notes\n")
    s3.put_object(Bucket=s3_bucket, Key="event/day1/cover.jpg", Body=b"\xff\xd8\xff\xe0 not a video")
    uri = f"s3://{s3_bucket}/event/"
    args = [
        "migrate",
        uri,
        "--include",
        "**",
        "--parent-id",
        emu.project_id,
        "--ledger",
        str(tmp_path / "l.db"),
    ]
    result = run_cli([*args, "--wait-timeout", "120"], cli_env(emu), timeout=240)
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert "2 not video files though --include took them, refused" in said, said
    assert "day1/cover.jpg" in said and "notes.txt" in said
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == ["talk-0", "talk-1"]  # nothing was made of the others
    assert {v["status"] for v in videos} == {"done"}


def _report(folder: Path) -> tuple[str, dict[str, Any]]:
    return (folder / "report.html").read_text(), json.loads((folder / "report.json").read_text())


def test_a_rerun_says_what_this_run_did_and_each_report_is_of_its_own_finished_run(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    ledger = str(tmp_path / "l.db")
    migrate = ["migrate", str(inventory), "--parent-id", emu.project_id, "--ledger", ledger]
    first = run_cli([*migrate, "--report", str(tmp_path / "m1")], cli_env(emu), timeout=240)
    again = run_cli([*migrate, "--report", str(tmp_path / "m2")], cli_env(emu), timeout=240)
    assert first.returncode == 0 and again.returncode == 0, first.stdout + again.stdout + again.stderr
    assert "this run: 2 created, 2 completed, 0 failed; 0 items already done (skipped)" in first.stdout
    assert "this run: nothing sent; 2 items already done (skipped)" in again.stdout, again.stdout
    assert "this run: 0 B sent" in again.stdout, again.stdout
    assert len(emu_control.videos(emu)) == 2

    video = emu_control.videos(emu)[0]["id"]
    ops = tmp_path / "ops.csv"
    ops.write_text(f"op,target,title\nupdate,{video},Renamed\n")
    apply = ["apply", str(ops), "--ledger", ledger]
    applied = run_cli([*apply, "--report", str(tmp_path / "a1")], cli_env(emu), timeout=240)
    reapplied = run_cli([*apply, "--report", str(tmp_path / "a2")], cli_env(emu), timeout=240)
    assert applied.returncode == 0 and reapplied.returncode == 0, applied.stdout + reapplied.stdout
    assert "this run: 1 acted on (1 done, 0 failed); 0 already done (skipped)" in applied.stdout
    assert "this run: nothing sent; 1 already done (skipped)" in reapplied.stdout, reapplied.stdout

    for folder, job, title in [
        ("m1", "migrate", "videoferry migration report"),
        ("m2", "migrate", "videoferry migration report"),
        ("a1", "apply", "videoferry operations report"),  # on a ledger that holds items too
        ("a2", "apply", "videoferry operations report"),
    ]:
        page, document = _report(tmp_path / folder)
        assert f"<title>{title}</title>" in page, folder
        assert "running" not in page, folder  # the run that wrote it is finished right after, done
        assert re.search(rf"this run: {job} \S+, started [^<]*, done", page), folder
        assert document["this_run"]["job"] == job and document["this_run"]["status"] == "done", folder
    assert "this run: nothing sent; 2 items already done (skipped)" in _report(tmp_path / "m2")[0]


def test_a_video_the_service_could_not_process_is_said_to_stay_and_the_way_to_remove_it_works(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("speaker notes, not a video\n")
    rows = [*clip_rows(clip_factory, 1, metadata=False), {"source": str(notes), "title": "Notes"}]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    ledger = tmp_path / "l.db"
    args = ["migrate", str(inventory), "--parent-id", emu.project_id, "--ledger", str(ledger)]
    result = run_cli([*args, "--wait-timeout", "120"], cli_env(emu), timeout=240)
    said = result.stdout + result.stderr
    assert result.returncode == 1, said
    assert "videos the service could not process stay in it (1, status error or aborted)" in said, said
    assert "--retry-errors" in said and "a row `delete,<video id>` each (columns op,target)" in said
    book = Ledger.open(ledger, create=False)
    try:
        (failed,) = book.items(["error"])
    finally:
        book.close()
    assert [v["status"] for v in emu_control.videos(emu) if v["id"] == failed.video_id] == ["error"]
    assert f"(columns op,target): {failed.video_id}" in said
    # the way the line gives removes it
    ops = tmp_path / "remove.csv"
    ops.write_text(f"op,target\ndelete,{failed.video_id}\n")
    removed = run_cli(
        ["apply", str(ops), "--allow-delete", "--ledger", str(ledger)], cli_env(emu), timeout=240
    )
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert failed.video_id not in [v["id"] for v in emu_control.videos(emu)]

"""`videoferry apply OPS --dry-run` against the emulator: selectors expanded, key: from a real migrate ledger,
refused rows listed, only GET calls, exit statuses."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from connectors.client import VideoClient
from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tests.flows.helpers import cli_env, clip_rows, run_cli, settings_for, write_inventory


def _run(args: list[str], ws: Workspace | None, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cli_env(ws, **env), timeout=240)


def _write_ops(path: Path, rows: list[dict[str, Any]]) -> Path:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture()
def library(tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory) -> dict[str, Any]:
    """Two videos migrated for real (ledger with keys), three more uploaded into a second project."""
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    ledger = tmp_path / "ledger.db"
    done = _run(
        ["migrate", str(inventory), "--no-prefect", "--parent-id", emu.project_id, "--ledger", str(ledger)],
        emu,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with Ledger.open(ledger, create=False) as book:
        keys = {item.spec.key: item.video_id for item in book.items()}
    project, folder = emu_control.create_project(emu)
    uploaded: dict[str, str] = {}
    with VideoClient.from_settings(settings_for(emu)) as client:
        for title, parent in (("Intro A", project), ("Intro B", project), ("Outro", folder)):
            data = clip_factory(1.0, name=f"{title}.mp4").read_bytes()
            result = client.uploads.single(parent_id=parent, title=title, source=data, filename="c.mp4")
            uploaded[title] = str(result.id)
    return {"ledger": ledger, "keys": keys, "project": project, "folder": folder, "videos": uploaded}


def test_dry_run_lists_each_row_and_makes_only_get_calls(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    (k0, v0), (k1, v1) = library["keys"].items()
    project, folder, videos = library["project"], library["folder"], library["videos"]
    chapters = json.dumps([{"time": 0, "title": "Start"}, {"time": 1, "title": "Two"}])
    ops = _write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "chapters", "id": "ch", "target": f"key:{k0}", "chapters": chapters},
            {"op": "update", "id": "intros", "target": f"select:project={project};title=Intro*;status=done",
             "tags": "intro"},
            {"op": "copy", "id": "cp", "target": "op:ch", "parent_id": project},
            {"op": "delete", "id": "del", "target": f"select:folder={folder}"},
            {"op": "update", "id": "none", "target": f"select:project={project};title=Nothing", "title": "x"},
            {"op": "move", "id": "mv", "target": "op:none", "project_id": project},
            {"op": "update", "id": "bad", "target": "key:nope", "title": "y"},
            {"op": "update", "id": "dangling", "target": "op:missing", "title": "z"},
            {"op": "concat", "id": "cc", "target": f"key:{k1}", "prepend": f"key:{k0}", "append": "op:cp"},
            {"op": "teleport", "target": v0},
        ],
    )  # fmt: skip
    mark = time.time()
    result = _run(["apply", str(ops), "--dry-run", "--ledger", str(library["ledger"])], emu)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    lines = out.splitlines()

    def line(prefix: str) -> str:
        found = [x for x in lines if x.startswith(prefix)]
        assert len(found) == 1, (prefix, out)
        return found[0]

    assert (
        line("row 1: chapters ch on ")
        == f"row 1: chapters ch on 1 video [{v0}] (key:{k0}): 2 chapters from 0:00 'Start'"
    )
    intros = line("row 2: update intros on 2 videos [")
    assert videos["Intro A"] in intros and videos["Intro B"] in intros and videos["Outro"] not in intros
    assert intros.endswith(": tags=[intro]")
    assert (
        line("row 3: copy cp on ")
        == f"row 3: copy cp on the video of op:ch (row 1): into {project}; waits for op:ch (row 1)"
    )
    assert (
        line("row 4: delete del on ")
        == f"row 4: delete del on 1 video [{videos['Outro']}] (select:folder={folder})"
    )
    concat = line("row 9: concat cc on ")
    assert f"[{v1}] (key:{k1})" in concat and f"prepend [{v0} (key:{k0})], append [op:cp]" in concat
    assert concat.endswith("waits for op:cp (row 3)")
    assert line("skipped row 5, field target: ").endswith("matches no video")
    assert "waits for op:none (row 5), which acts on no video" in line("skipped row 6, field target: ")
    assert "key:nope is no item of the ledger" in line("refused row 7, field target: ")
    assert "dangling reference" in line("refused row 8, field target: ")
    assert line("refused row 10, field op: ")
    assert lines[-1] == (
        "dry run: 5 operations planned on 5 known videos, 3 rows refused, 2 skipped (nothing to act on);"
        " 1 delete row (1 video) would be refused without --allow-delete"
    )

    calls = [(r["method"], r["path"]) for r in emu_control.requests(emu.workspace_id, since=mark)]
    assert calls and set(calls) == {("GET", "/v1/videos")}  # one listing per distinct filter set
    assert len(calls) == 3  # project, folder, project with the exact title "Nothing"
    with Ledger.open(library["ledger"], create=False) as book:
        assert {item.spec.key: item.video_id for item in book.items()} == library["keys"]
        assert book.ops() == []


def test_a_clean_file_exits_0_and_allow_delete_changes_the_wording(
    tmp_path: Path, emu: Workspace, library: dict[str, Any]
) -> None:
    ops = _write_ops(
        tmp_path / "ops.csv", [{"op": "delete", "target": f"select:project={library['project']}"}]
    )
    result = _run(["apply", str(ops), "--dry-run", "--allow-delete", "--ledger", str(library["ledger"])], emu)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == (
        "dry run: 1 operation planned on 3 known videos, 0 rows refused; 1 delete row would delete 3 videos"
    )


def test_without_dry_run_or_configuration_exits_2_and_calls_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    ops = _write_ops(tmp_path / "ops.csv", [{"op": "update", "target": "select:title=x", "title": "y"}])
    mark = time.time()
    plain = _run(["apply", str(ops)], emu)
    assert plain.returncode == 2 and "apply runs only with --dry-run in this version" in plain.stderr
    no_token = _run(["apply", str(ops), "--dry-run"], emu, VIDEOFERRY_TOKEN="")
    assert no_token.returncode == 2 and "VIDEOFERRY_TOKEN" in no_token.stderr
    missing = _run(["apply", str(tmp_path / "nope.csv"), "--dry-run"], emu)
    assert missing.returncode == 2 and "nope.csv" in missing.stderr
    bad_token = _run(["apply", str(ops), "--dry-run"], emu, VIDEOFERRY_TOKEN="vf-revoked-0123456789abcdef")
    assert bad_token.returncode == 2 and "VIDEOFERRY_TOKEN" in bad_token.stderr
    assert [(r["method"], r["status"]) for r in emu_control.requests(since=mark)] == [("GET", 401)]
    assert emu.token not in plain.stderr + no_token.stderr + bad_token.stdout + bad_token.stderr

"""`videoferry apply OPS --dry-run` against the emulator: selectors expanded, key: from a real migrate ledger,
refused rows listed, only GET calls, exit statuses."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tests.flows.apply_fixtures import run_vf as _run
from tests.flows.apply_fixtures import write_ops as _write_ops


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
    # one listing per distinct filter set: project, folder, project with the exact title "Nothing"; and one
    # GET of the video whose chapters are checked against its duration (the listings did not show it)
    assert sorted(calls) == [("GET", "/v1/videos")] * 3 + [("GET", f"/v1/videos/{v0}")]
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


def test_configuration_to_fix_exits_2_and_writes_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    ops = _write_ops(tmp_path / "ops.csv", [{"op": "update", "target": "select:title=x", "title": "y"}])
    mark = time.time()
    revoked = "vf-revoked-0123456789abcdef"
    ledger = str(tmp_path / "l.db")
    plain = _run(["apply", str(ops), "--no-prefect", "--ledger", ledger], emu, VIDEOFERRY_TOKEN=revoked)
    assert plain.returncode == 2 and "VIDEOFERRY_TOKEN" in plain.stderr, plain.stdout + plain.stderr
    assert not Path(ledger).exists()  # the token is checked before the ledger is touched
    gone = _run(["apply", str(tmp_path / "nope.csv"), "--no-prefect", "--ledger", ledger], emu)
    assert gone.returncode == 2 and "nope.csv" in gone.stderr
    no_token = _run(["apply", str(ops), "--dry-run"], emu, VIDEOFERRY_TOKEN="")
    assert no_token.returncode == 2 and "VIDEOFERRY_TOKEN" in no_token.stderr
    missing = _run(["apply", str(tmp_path / "nope.csv"), "--dry-run"], emu)
    assert missing.returncode == 2 and "nope.csv" in missing.stderr
    bad_token = _run(["apply", str(ops), "--dry-run"], emu, VIDEOFERRY_TOKEN="vf-revoked-0123456789abcdef")
    assert bad_token.returncode == 2 and "VIDEOFERRY_TOKEN" in bad_token.stderr
    # The API calls: one refused list per run with the bad token (the addresses' checks carry no token, and
    # are not calls: GET /v1/videos answered 400 for the missing token, GET /v2/init 405).
    probes = {("GET", "/v1/videos", 400), ("GET", "/v2/init", 405)}
    log = [(r["method"], r["path"], r["status"]) for r in emu_control.requests(since=mark)]
    assert [call for call in log if call not in probes] == [("GET", "/v1/videos", 401)] * 2, log
    assert emu.token not in plain.stderr + no_token.stderr + bad_token.stdout + bad_token.stderr


def test_the_api_dry_run_is_the_command_line_s(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """videoferry.apply(..., dry_run=True) previews as `apply --dry-run` does (the command calls it): the
    same lines and exit status, GET calls only, nothing in the ledger."""
    import videoferry

    (k0, v0), _ = library["keys"].items()
    ops = _write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "update", "id": "one", "target": f"key:{k0}", "title": "Renamed"},
            {"op": "update", "id": "bad", "target": "key:nope", "title": "y"},
        ],
    )
    ledger = str(library["ledger"])
    command = _run(["apply", str(ops), "--dry-run", "--ledger", ledger], emu)
    monkeypatch.setenv("VIDEOFERRY_API_URL", emu.base_url)
    monkeypatch.setenv("VIDEOFERRY_UPLOAD_URL", emu.upload_url)
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    mark = time.time()
    preview = videoferry.apply(str(ops), ledger=ledger, dry_run=True)
    assert isinstance(preview, videoferry.Preview)
    assert preview.lines == command.stdout.splitlines() and preview.exit_code == command.returncode == 1
    assert any(line.startswith("row 1: update one on 1 video [") for line in preview.lines), preview.lines
    whole = videoferry.apply(videoferry.ApplyOptions(ops=str(ops), ledger=ledger, dry_run=True))
    assert isinstance(whole, videoferry.Preview) and whole.lines == preview.lines
    calls = {r["method"] for r in emu_control.requests(emu.workspace_id, since=mark)}
    assert calls <= {"GET"}, calls  # no write
    assert "Renamed" not in {video["title"] for video in emu_control.videos(emu)}
    with Ledger.open(library["ledger"], create=False) as book:
        assert book.ops() == []

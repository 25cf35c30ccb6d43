"""`videoferry apply` against the emulator: every kind, references between rows, exactly once on a rerun."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.state.ledger import Ledger

WRITES = ("POST", "PUT", "PATCH", "DELETE")


def writes(control: EmulatorControl, ws: Workspace, since: float) -> list[tuple[str, str]]:
    """The write calls the workspace received since a moment."""
    logged = control.requests(ws.workspace_id, since=since)
    return [(r["method"], r["path"]) for r in logged if r["method"] in WRITES]


def test_every_kind_runs_once_in_reference_order(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    (k0, v0), (k1, v1) = library["keys"].items()
    project, folder, videos = library["project"], library["folder"], library["videos"]
    wait_done(emu_control, emu)
    chapters = json.dumps([{"time": "0:00", "title": "Start"}, {"time": 0.5, "title": "Half"}])
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "chapters", "id": "ch", "target": f"key:{k0}", "chapters": chapters},
            {"op": "cut", "id": "trim", "target": f"key:{k1}", "trim": '[{"start": 0.2, "length": 0.6}]'},
            {"op": "concat", "id": "joined", "target": "op:trim", "prepend": videos["Intro A"]},
            {"op": "move", "id": "mv", "target": "op:joined", "project_id": project,
             "folder_id": folder},
            {"op": "copy", "id": "cp", "target": "op:ch", "parent_id": project},
            {"op": "update", "id": "tag", "target": f"select:project={project};title=Intro*",
             "tags": "intro"},
            {"op": "delete", "id": "gone", "target": videos["Outro"]},
        ],
    )  # fmt: skip
    opts = ApplyOptions(
        ops=str(ops), ledger=str(library["ledger"]), allow_delete=True, wait_timeout=120
    )
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons + outcome.refused
    by_id = {v["id"]: v for v in wait_done(emu_control, emu)}
    with Ledger.open(library["ledger"], create=False) as book:
        units = {u.unit_key.split("@")[0] + ("@" if "@" in u.unit_key else ""): u for u in book.units()}
        all_units = book.units()
    assert {u.state for u in all_units} == {"done"}
    assert [c["title"] for c in by_id[v0]["chapters"]["items"]] == ["Start", "Half"]
    trimmed = by_id[units["trim"].result_id]
    assert abs(trimmed["duration"] - 0.6) < 0.15  # the trim kept 0.6 s of a 1 s clip, once
    joined = by_id[units["joined"].result_id]
    assert joined["id"] not in (v0, v1, videos["Intro A"])
    assert abs(joined["duration"] - (1.0 + trimmed["duration"])) < 0.2
    assert (joined["project_id"], joined["folder_id"]) == (project, folder)
    copied = by_id[units["cp"].result_id]
    assert copied["id"] != v0 and copied["project_id"] == project
    assert videos["Outro"] not in by_id
    tagged = [u for u in all_units if u.op_id == "tag"]
    assert sorted(u.video_id or "" for u in tagged) == sorted([videos["Intro A"], videos["Intro B"]])
    assert all("intro" in by_id[u.video_id or ""]["tags"] for u in tagged)

    # A rerun of the same file: nothing is written again, the copy of a copy is not made.
    mark = time.time()
    again = run_apply(opts, settings_for(emu))
    assert again.exit_code == 0, again.reasons + again.refused
    assert writes(emu_control, emu, mark) == []
    assert len(emu_control.videos(emu)) == len(by_id)

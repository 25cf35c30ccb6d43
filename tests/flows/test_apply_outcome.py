"""What apply's summary says about each operation not done: the true reason, never "not known yet" for an
operation that was never run, nor "stopped waiting" for a run that waited for nothing."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.flows.apply_fixtures import run_vf, wait_done, write_ops
from tests.flows.helpers import settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply


def test_a_trim_past_the_end_is_refused_before_any_call_in_the_dry_run_and_the_run(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    wait_done(emu_control, emu)
    (k0, v0), _ = library["keys"].items()
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            # the clip lasts 1 s (docs/jobs/apply.md's example trimmed 1800 s from 8 s of a 20 s clip)
            {"op": "cut", "id": "trim", "target": f"key:{k0}", "trim": '[{"start": 8, "length": 1800}]'},
            {"op": "move", "id": "mv", "target": "op:trim", "project_id": library["project"]},
        ],
    )
    mark = time.time()
    dry = run_vf(["apply", str(ops), "--dry-run", "--ledger", str(library["ledger"])], emu)
    assert dry.returncode != 0, dry.stdout + dry.stderr
    assert f"trim from 8 s for 1800 s ends at 1808 s, but the video {v0} lasts" in dry.stdout, dry.stdout

    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), poll_interval=5, wait_timeout=3600)
    outcome = run_apply(opts, settings_for(emu))
    said = "\n".join(outcome.reasons + outcome.refused)
    assert outcome.exit_code == 1, said
    assert "stopped waiting" not in said and "not known yet" not in said, said
    assert any("row 1" in line and "ends at 1808 s" in line for line in outcome.refused), said
    assert any("row 2" in line and "acts on no video" in line for line in outcome.refused), said
    writes = [r for r in emu_control.requests(emu.workspace_id, since=mark) if r["method"] != "GET"]
    assert writes == []  # refused before any call


def test_an_update_refused_with_401_says_the_token_was_refused_not_unknown(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    wait_done(emu_control, emu)
    (k0, _v0), (k1, _v1) = library["keys"].items()
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "update", "id": "a", "target": f"key:{k0}", "title": "New A"},
            {"op": "update", "id": "b", "target": f"key:{k1}", "title": "New B"},
        ],
    )
    read_only = replace(emu, token=emu_control.create_token(emu, read_only=True))  # its writes are refused
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), transfers=1, poll_interval=5)
    outcome = run_apply(opts, settings_for(read_only))
    said = "\n".join(outcome.reasons)
    assert outcome.exit_code == 2, said
    assert "stopped waiting" not in said and "not known yet" not in said, said
    units = [line for line in outcome.reasons if line.startswith("  row ")]
    assert len(units) == 2, said
    assert any("refused the token" in line and "nothing was changed" in line for line in units), said

"""What apply's summary says about each operation not done: the true reason, never "not known yet" for an
operation that was never run, nor "stopped waiting" for a run that waited for nothing."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from emulator.control import EmulatorControl, Workspace
from flows.apply.options import ApplyOptions
from flows.apply.runner import run_apply
from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import settings_for


def test_a_row_blocked_by_a_failed_row_says_so_and_nothing_waited(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    wait_done(emu_control, emu)
    (k0, _v0), _ = library["keys"].items()
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            # the clip lasts 1 s: the service refuses a trim past its end
            {"op": "cut", "id": "trim", "target": f"key:{k0}", "trim": '[{"start": 0.2, "length": 1800}]'},
            {"op": "move", "id": "mv", "target": "op:trim", "project_id": library["project"]},
        ],
    )
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), poll_interval=5, wait_timeout=3600)
    outcome = run_apply(opts, settings_for(emu))
    said = "\n".join(outcome.reasons)
    assert outcome.exit_code == 1, said
    assert "stopped waiting" not in said and "not known yet" not in said, said
    (trim,) = [line for line in outcome.reasons if line.startswith("  row 1 cut")]
    assert "(failed)" in trim and "trim" in trim, said
    (move,) = [line for line in outcome.reasons if line.startswith("  row 2 move")]
    assert "waits for op:trim, which failed" in move, said


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

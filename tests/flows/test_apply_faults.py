"""apply under lost answers and the service's other plausible choices: each call takes effect exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup

TRIM = '[{"start": 0.2, "length": 0.6}]'


def _ops(tmp_path: Path, library: dict[str, Any]) -> Path:
    (k0, _v0), (k1, _v1) = library["keys"].items()
    return write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "cut", "id": "trim", "target": f"key:{k1}", "trim": TRIM, "title": "Trimmed"},
            {"op": "concat", "id": "joined", "target": "op:trim", "prepend": f"key:{k0}"},
            {"op": "copy", "id": "cp", "target": f"key:{k0}", "parent_id": library["project"]},
            {"op": "move", "id": "mv", "target": "op:cp", "project_id": library["project"],
             "folder_id": library["folder"]},
        ],
    )  # fmt: skip


def _run(tmp_path: Path, library: dict[str, Any], emu: Workspace) -> tuple[int, dict[str, Any]]:
    opts = ApplyOptions(
        ops=str(_ops(tmp_path, library)), ledger=str(library["ledger"]), wait_timeout=120
    )
    outcome = run_apply(opts, settings_for(emu))
    with Ledger.open(library["ledger"], create=False) as book:
        units = {u.unit_key: u for u in book.units()}
        lost = [o for o in book.ops() if o.op_key and o.status == "void"]
    return outcome.exit_code, {"units": units, "void": lost, "reasons": outcome.reasons}


@pytest.mark.parametrize(
    "variants",
    [(), ("cut-new-video", "empty-bodies"), ("id-only-bodies", "copy-put", "cut-put", "list-lag")],
    ids=["default", "cut-new-video,empty-bodies", "id-only,put,list-lag"],
)
def test_lost_answers_are_found_not_repeated(
    variants: tuple[str, ...],
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", 4.0)  # list-lag is 1 s here: "not there" is believed sooner
    before = {v["id"] for v in wait_done(emu_control, emu)}
    emu_control.set_variants(emu, list(variants), list_lag_seconds=1.0)
    # Every create-like call is committed by the service, then its answer is lost, once each.
    emu_control.set_faults(
        emu,
        [
            {"kind": "drop_after_commit", "path": f"^/v1/videos/[^/]+/{action}$", "times": 1}
            for action in ("cut", "concat", "copy", "move")
        ],
    )
    code, seen = _run(tmp_path, library, emu)
    assert code == 0, seen["reasons"]
    units = seen["units"]
    assert {u.state for u in units.values()} == {"done"}
    for key in ("trim", "joined", "cp"):  # each answer was lost and the result found by looking, not again
        assert "lost answer" in (units[key].detail or ""), (key, units[key].detail)
    assert seen["void"] == []  # no call had to be made again (the client repeats a lost move by itself)
    videos = {v["id"]: v for v in wait_done(emu_control, emu)}
    made = set(videos) - before
    new_cut = "cut-new-video" in variants
    # Exactly the videos the creates made: the concat, the copy, and the cut's own when it makes one.
    expected = {units["joined"].result_id, units["cp"].result_id}
    expected |= {units["trim"].result_id} if new_cut else set()
    assert made == expected
    trimmed = videos[units["trim"].result_id or ""]
    assert abs(trimmed["duration"] - 0.6) < 0.15  # trimmed once: a second trim would keep 0.4 s
    assert trimmed["title"] == "Trimmed"
    assert ("new video" in (units["trim"].detail or "")) is new_cut
    source = videos[next(v for k, v in library["keys"].items() if units["trim"].video_id == v)]
    assert (abs(source["duration"] - 1.0) < 0.15) is new_cut  # the source is unchanged only by a new video
    copied = videos[units["cp"].result_id or ""]
    assert (copied["project_id"], copied["folder_id"]) == (library["project"], library["folder"])


def test_in_place_calls_refused_without_effect_are_made_again_once(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", 2.0)
    (_k0, v0), (_k1, v1) = library["keys"].items()
    wait_done(emu_control, emu)
    longer = clip_factory(2.0, name="longer.mp4")
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "cut", "id": "trim", "target": v1, "trim": TRIM},
            {"op": "replace", "id": "swap", "target": v0, "source": str(longer)},
        ],
    )
    # Both calls fail with a 500 before the service does anything: their outcome is unknown to the client,
    # the video is seen unchanged once the settle time has passed, and each is made again, once.
    emu_control.set_faults(
        emu,
        [
            {"kind": "error", "status": 500, "path": "^/v1/videos/[^/]+/cut$", "times": 1},
            {"kind": "error", "status": 500, "path": "^/v2/video$", "times": 1},
        ],
    )
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), wait_timeout=120)
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    with Ledger.open(library["ledger"], create=False) as book:
        calls = {k: [o.status for o in book.ops(op_key=k)] for k in ("trim", "swap")}
    assert calls == {"trim": ["void", "done"], "swap": ["void", "done"]}
    videos = {v["id"]: v for v in wait_done(emu_control, emu)}
    assert abs(videos[v1]["duration"] - 0.6) < 0.15  # trimmed once
    assert abs(videos[v0]["duration"] - 2.0) < 0.15  # the new bytes


def test_a_cut_answered_with_the_source_finds_the_new_video(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    # The service makes a new video and answers without a body: the client reads the source again, sees it
    # unchanged, and the new video is found by listing (not cut a second time).
    (_k0, _v0), (_k1, v1) = library["keys"].items()
    before = {v["id"] for v in wait_done(emu_control, emu)}
    emu_control.set_variants(emu, ["cut-new-video", "empty-bodies"])
    ops = write_ops(tmp_path / "ops.csv", [{"op": "cut", "id": "trim", "target": v1, "trim": TRIM}])
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), wait_timeout=120)
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    with Ledger.open(library["ledger"], create=False) as book:
        (unit,) = book.units()
    videos = {v["id"]: v for v in wait_done(emu_control, emu)}
    assert set(videos) - before == {unit.result_id}
    assert "new video" in (unit.detail or "")
    assert abs(videos[unit.result_id or ""]["duration"] - 0.6) < 0.15
    assert abs(videos[v1]["duration"] - 1.0) < 0.15


def test_a_status_read_that_fails_past_its_retries_is_read_again_not_the_end_of_the_run(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    """The joined video processes for a while; every read of it fails (5xx) more times than one call's
    retries: the run reads it again at the next interval and ends done (before: the error ended the run)."""
    (k0, v0), (k1, v1) = library["keys"].items()
    joined = {"op": "concat", "id": "joined", "target": f"key:{k1}", "prepend": f"key:{k0}"}
    ops = write_ops(tmp_path / "ops.csv", [joined])
    emu_control.set_processing(emu, "timed", 2.0)
    emu_control.set_poll_rule(emu, 0.2)
    reads_of_joined = rf"^/v1/videos/(?!{v0}|{v1})[^/]+$"  # any video but the sources
    fault = {"kind": "error", "status": 503, "method": "GET", "path": reads_of_joined, "times": 12}
    emu_control.set_faults(emu, [fault])
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), wait_timeout=120)
    outcome = run_apply(opts, settings_for(emu))
    failed_reads = [
        r for r in emu_control.requests(emu.workspace_id)
        if r["method"] == "GET" and r["path"].startswith("/v1/videos/") and r["status"] == 503
    ]  # fmt: skip
    assert outcome.exit_code == 0, outcome.reasons
    assert len(failed_reads) >= 5  # one call's five attempts all failed: the read failed past its retries
    with Ledger.open(library["ledger"], create=False) as book:
        assert [u.state for u in book.units()] == ["done"]

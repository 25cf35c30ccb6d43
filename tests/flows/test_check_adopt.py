"""check --adopt after apply: a lost ledger rebuilt without a re-upload, a third copy or reverted chapters."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import api_calls, clip_rows, creates, options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import run_check
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger

WRITES = ("POST", "PUT", "PATCH", "DELETE")
TRIM = '[{"start": 0.2, "length": 0.6}]'
#: The chapters apply sets on row 2 (the row itself asks for "Start" and "Глава").
APPLIED = [{"time": "0:00", "title": "Opening"}, {"time": 0.4, "title": "Apply's"}]


@pytest.fixture()
def applied(tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory) -> dict[str, Any]:
    """Rows 0-2 migrated; apply trims row 0 in place, copies row 1 beside it, sets row 2's chapters; then
    the ledger is lost. Row 3 was never migrated."""
    rows = clip_rows(clip_factory, 4)
    first = write_inventory(tmp_path / "first.csv", rows[:3])
    ledger = tmp_path / "ledger.db"
    done = run_migration(options(first, emu, tmp_path), settings_for(emu))
    assert done.exit_code == 0, done.reasons
    with Ledger.open(ledger, create=False) as book:
        keys = [item.spec.key for item in sorted(book.items(), key=lambda i: i.spec.row or 0)]
        ids = {item.spec.key: item.video_id for item in book.items()}
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "cut", "id": "trim", "target": f"key:{keys[0]}", "trim": TRIM},
            {"op": "copy", "id": "cp", "target": f"key:{keys[1]}", "parent_id": emu.project_id},
            {"op": "chapters", "id": "ch", "target": f"key:{keys[2]}", "chapters": json.dumps(APPLIED)},
        ],
    )  # fmt: skip
    opts = ApplyOptions(ops=str(ops), ledger=str(ledger), wait_timeout=120)
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons + outcome.refused
    videos = wait_done(emu_control, emu)
    assert len(videos) == 4  # three migrated, one copy (the trim wrote back to its video)
    ledger.unlink()  # the disk is gone
    inventory = write_inventory(tmp_path / "all.csv", rows)
    return {"inventory": inventory, "keys": keys, "ids": ids, "rows": rows}


def _adopt(tmp_path: Path, emu: Workspace, inventory: Path, **flags: Any) -> Any:
    opts = CheckOptions(
        inventory=str(inventory),
        ledger=str(tmp_path / "rebuilt.db"),
        parent_id=emu.project_id,
        adopt=True,
        **flags,
    )
    return run_check(opts, settings_for(emu))


def _writes_to(emu_control: EmulatorControl, emu: Workspace, since: float, ids: list[str]) -> list[str]:
    """The write calls since a moment that touched one of these videos."""
    calls = api_calls(emu_control, emu, since=since)
    return [
        f"{c['method']} {c['path']}"
        for c in calls
        if c["method"] in WRITES and any(i in c["path"] for i in ids)
    ]


def test_recipe_after_apply_neither_uploads_again_nor_copies_nor_reverts(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, applied: dict[str, Any]
) -> None:
    keys, ids = applied["keys"], applied["ids"]
    mark = time.time()
    adopted = _adopt(tmp_path, emu, applied["inventory"])
    assert not [c for c in api_calls(emu_control, emu, since=mark) if c["method"] in WRITES]
    by_key = {a.key: a for a in adopted.adoptions}
    assert [by_key[k].adopted for k in keys] == [True, True, True]
    assert [by_key[k].video_id for k in keys] == [ids[k] for k in keys]  # the copy is not row 1's
    assert "other bytes than its source" in by_key[keys[0]].detail  # the trimmed lecture, said
    assert "the oldest of 2" in by_key[keys[1]].detail
    assert "kept as the service has them: chapters" in by_key[keys[2]].detail
    assert all(by_key[k].writes == () for k in keys)
    new_key = next(a.key for a in adopted.adoptions if a.key not in keys)
    assert by_key[new_key].creates and not by_key[new_key].adopted
    closing = adopted.notes[-1]
    assert closing == f"a following migrate creates 1 video(s): {new_key}; writes the row's fields to 0"

    mark = time.time()
    again = run_migration(
        options(applied["inventory"], emu, tmp_path, ledger=str(tmp_path / "rebuilt.db")), settings_for(emu)
    )
    assert again.exit_code == 0, again.reasons
    assert len(creates(emu_control, emu, since=mark)) == 1  # row 3 only: no re-upload, no third copy
    assert _writes_to(emu_control, emu, mark, [ids[k] for k in keys]) == []
    videos = {v["id"]: v for v in wait_done(emu_control, emu)}
    assert len(videos) == 5
    assert [c["title"] for c in videos[ids[keys[2]]]["chapters"]["items"]] == ["Opening", "Apply's"]
    assert videos[ids[keys[0]]]["duration"] < 0.9  # still trimmed


def test_flags_say_and_do_the_reupload_and_the_rewrite(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, applied: dict[str, Any]
) -> None:
    keys, ids = applied["keys"], applied["ids"]
    adopted = _adopt(tmp_path, emu, applied["inventory"], reupload_unproven=True, rewrite_differing=True)
    by_key = {a.key: a for a in adopted.adoptions}
    assert [by_key[k].adopted for k in keys] == [False, False, True]
    assert by_key[keys[0]].creates and by_key[keys[1]].creates
    assert "chapters" in by_key[keys[2]].writes
    new_key = next(a.key for a in adopted.adoptions if a.key not in keys)
    expected = [keys[0], keys[1], new_key]
    assert sorted(a.key for a in adopted.adoptions if a.creates) == sorted(expected)
    assert adopted.summary["left_to_migrate"] == 3 and adopted.summary["migrate_writes"] == 1

    mark = time.time()
    again = run_migration(
        options(applied["inventory"], emu, tmp_path, ledger=str(tmp_path / "rebuilt.db")), settings_for(emu)
    )
    assert again.exit_code == 0, again.reasons
    assert len(creates(emu_control, emu, since=mark)) == 3  # what --adopt said, and no more
    touched = _writes_to(emu_control, emu, mark, [ids[k] for k in keys])
    assert touched and all(ids[keys[2]] in call for call in touched)  # only row 2's fields were written
    videos = {v["id"]: v for v in wait_done(emu_control, emu)}
    assert [c["title"] for c in videos[ids[keys[2]]]["chapters"]["items"]] == ["Start", "Глава"]


def test_a_title_shared_by_rows_with_no_provable_video_is_held_not_uploaded(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 2, metadata=False)
    rows[1]["title"] = rows[0]["title"]  # two rows, one title
    first = write_inventory(tmp_path / "first.csv", rows)
    done = run_migration(options(first, emu, tmp_path), settings_for(emu))
    assert done.exit_code == 0, done.reasons
    (tmp_path / "ledger.db").unlink()
    other = clip_factory(2.0, name="other.mp4")  # row 1's file changed since: no video has its bytes
    rows[1]["source"] = str(other)
    inventory = write_inventory(tmp_path / "all.csv", rows)
    adopted = _adopt(tmp_path, emu, inventory)
    held = [a for a in adopted.adoptions if not a.adopted and not a.creates]
    assert [a.adopted for a in adopted.adoptions].count(True) == 1
    assert len(held) == 1 and "--reupload-unproven" in held[0].detail
    assert "1 held" in adopted.notes[-1]
    mark = time.time()
    again = run_migration(
        options(inventory, emu, tmp_path, ledger=str(tmp_path / "rebuilt.db")), settings_for(emu)
    )
    assert creates(emu_control, emu, since=mark) == []
    assert again.exit_code == 1  # the held item is named as failed, with what to do
    assert any("--reupload-unproven" in reason for reason in again.reasons), again.reasons

    released = _adopt(tmp_path, emu, inventory, reupload_unproven=True)  # the user says so
    assert [a.key for a in released.adoptions if a.creates] == [held[0].key]
    mark = time.time()
    last = run_migration(
        options(inventory, emu, tmp_path, ledger=str(tmp_path / "rebuilt.db")), settings_for(emu)
    )
    assert last.exit_code == 0, last.reasons
    assert len(creates(emu_control, emu, since=mark)) == 1

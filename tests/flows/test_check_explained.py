"""videoferry check of a shared project that apply changed on purpose: the ledger's own operations explain
their differences (`~`, not counted), `+` covers the parents the inventory writes to (not the project's
folders), and --one-way looks for no `+` at all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import cli_env, clip_rows, options, run_cli, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.connectors.sources import open_source
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks.service import run_limiter

TRIM = '[{"start": 0.2, "length": 0.6}]'
CHAPTERS = [{"time": "0:00", "title": "Opening"}, {"time": 0.4, "title": "Apply's"}]
MARKS = ("= ", "* ", "- ", "+ ", "! ", "~ ")


def _by_hand(emu: Workspace, ledger: Path) -> VideoClient:
    """A client changing things behind the tool's back, inside the same rate budget as the tool's runs."""
    settings = settings_for(emu)
    return VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger)))


def _video_of(line: str) -> str:
    """The video id a check line names."""
    return line.split(" video ")[1].split(" ")[0].rstrip(":")


def _lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:2] in MARKS]


def test_a_library_apply_changed_on_purpose_checks_clean_and_a_change_by_hand_does_not(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 4)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    ledger = tmp_path / "ledger.db"
    migrated = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert migrated.exit_code == 0, migrated.reasons
    with Ledger.open(ledger, create=False) as book:
        keys = [i.spec.key for i in sorted(book.items(), key=lambda i: i.spec.row or 0)]
        ids = {i.spec.key: str(i.video_id) for i in book.items()}
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "cut", "id": "trim", "target": f"key:{keys[0]}", "trim": TRIM},
            {"op": "update", "id": "rename", "target": f"key:{keys[1]}", "title": "Renamed by apply"},
            {"op": "copy", "id": "cp", "target": f"key:{keys[2]}", "parent_id": emu.project_id},
            {"op": "chapters", "id": "ch", "target": f"key:{keys[2]}", "chapters": json.dumps(CHAPTERS)},
            {"op": "delete", "id": "gone", "target": f"key:{keys[3]}"},
        ],
    )  # fmt: skip
    applied = run_apply(
        ApplyOptions(ops=str(ops), ledger=str(ledger), wait_timeout=120, allow_delete=True), settings_for(emu)
    )
    assert applied.exit_code == 0, applied.reasons + applied.refused
    with _by_hand(emu, ledger) as hand:  # another team's video, in a folder of the shared project
        hand.uploads.single(
            parent_id=emu.folder_id,
            title="Their clip",
            source=open_source(str(clip_factory(1.0, name="t.mp4"))),
        )
    wait_done(emu_control, emu)
    check = ["check", str(inventory), "--ledger", str(ledger), "--parent-id", emu.project_id]

    clean = run_cli(check, cli_env(emu))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    lines = _lines(clean.stdout)
    by_video = {
        line.split(" video ")[1].split(" ")[0].rstrip(":"): line for line in lines if " video " in line
    }
    explained = {
        keys[0]: "size, md5 by apply op trim (cut)",  # new bytes: explained without a value
        keys[1]: "title by apply op rename (update)",
        keys[2]: "chapters by apply op ch (chapters)",
    }
    for key, why in explained.items():
        assert by_video[ids[key]].startswith("~ ") and why in by_video[ids[key]], by_video[ids[key]]
    deleted = next(line for line in lines if line.startswith(f"~ {keys[3]} "))
    assert "deleted by this ledger's apply op gone (delete)" in deleted
    copies = [line for line in lines if "made by this ledger's apply op cp (copy)" in line]
    assert len(copies) == 1 and copies[0].startswith("~ video ")
    assert not [line for line in lines if line.startswith("+ ") or "Their clip" in line]  # out of scope
    assert "1 videos in other folders of the checked projects were not looked at" in clean.stdout
    assert "5 explained (~)" in clean.stdout

    with _by_hand(emu, ledger) as hand:  # a stray at the top of the project
        hand.uploads.single(
            parent_id=emu.project_id, title="Stray", source=open_source(str(clip_factory(1.0, name="s.mp4")))
        )
    wait_done(emu_control, emu)
    stray = run_cli(check, cli_env(emu))
    extras = [line for line in _lines(stray.stdout) if line.startswith("+ ")]
    assert stray.returncode == 1 and len(extras) == 1 and '"Stray"' in extras[0]
    one_way = run_cli([*check, "--one-way"], cli_env(emu))
    assert one_way.returncode == 0, one_way.stdout + one_way.stderr
    assert not [line for line in _lines(one_way.stdout) if line.startswith(("+ ", "~ video"))]
    assert "videos only in the service were not looked for" in one_way.stdout

    with _by_hand(emu, ledger) as hand:  # a title changed by hand after apply renamed it
        hand.videos.update(ids[keys[1]], title="Renamed by hand")
    by_hand = run_cli([*check, "--one-way"], cli_env(emu))
    assert by_hand.returncode == 1
    renamed = next(line for line in _lines(by_hand.stdout) if ids[keys[1]] in line)
    assert renamed.startswith("* ") and "differs in title" in renamed  # apply set another one

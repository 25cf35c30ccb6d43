"""Additional materials through a backup and a restore, end to end against the emulator: saved under their
own file names when the service links them (variant materials-downloadable), attached again under those
names with the same bytes, checked `=`; without links (the default) the backup notes it and the restore
still works, without materials."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.flows.backup_fixtures import FAST, backup, md5_of
from tests.flows.helpers import options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import run_check
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks.backup.files import safe_name

SLIDES = b"%PDF-1.4\n" + bytes(range(256)) * 40
HANDOUT = b"Handout: read chapter 2 before the talk.\n" * 30


def _library(tmp: Path, control: EmulatorControl, ws: Workspace, make: Any) -> dict[str, dict[str, str]]:
    """Migrate two clips, one with slides.pdf and handout.txt, one with none; {title: {name: md5}}."""
    control.set_limits(ws, **FAST)
    (tmp / "slides.pdf").write_bytes(SLIDES)
    (tmp / "handout.txt").write_bytes(HANDOUT)
    rows = [
        {
            "source": str(make(1.0, name="talk.mp4")),
            "title": "Talk with materials",
            "attachments": json.dumps([str(tmp / "slides.pdf"), str(tmp / "handout.txt")]),
        },
        {"source": str(make(1.0, name="plain.mp4")), "title": "Plain talk", "attachments": ""},
    ]
    inventory = write_inventory(tmp / "source.csv", rows)
    opts = options(inventory, ws, tmp, ledger=str(tmp / "migrate.db"))
    outcome = run_migration(opts, settings_for(ws, **FAST))
    assert outcome.exit_code == 0, outcome.reasons
    return {
        "Talk with materials": {
            "slides.pdf": hashlib.md5(SLIDES).hexdigest(),
            "handout.txt": hashlib.md5(HANDOUT).hexdigest(),
        },
        "Plain talk": {},
    }


def _materials(control: EmulatorControl, ws: Workspace) -> dict[str, dict[str, str]]:
    """{title: {material file name: md5}} of every video, as the service holds them."""
    return {
        v["title"]: {m["original_name"]: m["md5"] for m in v.get("additional_materials") or []}
        for v in control.videos(ws)
    }


def _restore(tmp: Path, control: EmulatorControl, inventory: Path) -> tuple[Workspace, Any]:
    """`migrate INVENTORY --parent-id <project of a second workspace>` with its token, then `check`."""
    other = control.create_workspace()
    control.set_limits(other, **FAST)
    ledger = tmp / "restore.db"
    restored = run_migration(options(inventory, other, tmp, ledger=str(ledger)), settings_for(other, **FAST))
    assert restored.exit_code == 0, restored.reasons
    check = CheckOptions(inventory=str(inventory), ledger=str(ledger), parent_id=other.project_id)
    return other, run_check(check, settings_for(other, **FAST))


def _files_notes(ledger: Path) -> list[str]:
    """The notes the backup's files steps left on materials."""
    with Ledger.open(ledger, create=False) as book:
        ops = [o for o in book.ops(kind="backup", status="done") if (o.op_key or "").endswith(":files")]
    notes = [note for o in ops for note in (o.result or {}).get("notes", [])]
    return [note for note in notes if note.startswith("material")]  # the poster's are not ours


def test_materials_are_backed_up_under_their_names_and_restored_with_the_same_bytes(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    emu_control.set_variants(emu, ["materials-downloadable"])
    expected = _library(tmp_path, emu_control, emu, clip_factory)
    assert _materials(emu_control, emu) == expected
    truth = {v["title"]: v for v in emu_control.videos(emu)}
    dest = tmp_path / "backup"
    caplog.set_level(logging.DEBUG)
    outcome = backup(emu, str(dest), tmp_path / "backup.db", report_dir=str(tmp_path / "report"))
    assert outcome.exit_code == 0, outcome.reasons
    # The materials' links are secrets: in no log, report, index or ledger result.
    with Ledger.open(tmp_path / "backup.db", create=False) as book:
        results = json.dumps([o.result for o in book.ops(kind="backup")], default=str)
    shown = (
        caplog.text + results + (dest / "manifest.json").read_text() + (dest / "inventory.csv").read_text()
    )
    shown += "".join(p.read_text() for p in (tmp_path / "report").iterdir() if p.suffix != ".parquet")
    assert "/materials/" in results  # the materials were saved (the files steps ran)
    assert "sig=" not in shown and "download_link" not in shown

    # Saved as materials/<material id>/<original name>, the same bytes; the inventory names those files.
    talk = truth["Talk with materials"]
    for material in talk["additional_materials"]:
        saved = dest / "videos" / talk["id"] / "materials" / material["id"] / material["original_name"]
        assert md5_of(saved) == material["md5"]
    assert not (dest / "videos" / truth["Plain talk"]["id"] / "materials").exists()
    assert _files_notes(tmp_path / "backup.db") == []
    manifest = json.loads((dest / "manifest.json").read_text())
    assert sorted(Path(o["path"]).name for o in manifest["objects"] if o["kind"] == "material") == [
        "handout.txt",
        "slides.pdf",
    ]

    # The restore attaches them under their own names; check says `=` on every line.
    other, checked = _restore(tmp_path, emu_control, dest / "inventory.csv")
    assert _materials(emu_control, other) == expected
    assert [line.mark.value for line in checked.lines] == ["=", "="], [x.text() for x in checked.lines]

    # A rerun of the backup changes nothing (the files digest is what it was).
    again = backup(emu, str(dest), tmp_path / "backup.db")
    assert again.exit_code == 0 and again.counts == {"unchanged": 2}


def test_without_links_the_backup_notes_it_and_the_restore_has_no_materials(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    _library(tmp_path, emu_control, emu, clip_factory)  # the default: materials shown with no link
    dest = tmp_path / "backup"
    outcome = backup(emu, str(dest), tmp_path / "backup.db")
    assert outcome.exit_code == 0, outcome.reasons
    assert not list(dest.rglob("materials"))
    assert _files_notes(tmp_path / "backup.db") == ["materials shown without a link: 2 (not saved)"]
    other, checked = _restore(tmp_path, emu_control, dest / "inventory.csv")
    assert _materials(emu_control, other) == {"Talk with materials": {}, "Plain talk": {}}
    assert [line.mark.value for line in checked.lines] == ["=", "="], [x.text() for x in checked.lines]


def _old_layout(ledger: Path, dest: Path) -> list[str]:
    """Turn the backup into one the previous layout made: each material moved to materials/<id>.<ext> and a
    files step recorded (through the ledger's API) with those paths; the old paths."""
    with Ledger.open(ledger) as book:
        done = [o for o in book.ops(kind="backup", status="done") if (o.op_key or "").endswith(":files")]
        for op in done:
            files = []
            for f in (op.result or {}).get("files", []):
                if f["kind"] == "material":
                    new = Path(f["path"])
                    old = new.parent.with_name(f"{new.parent.name}{new.suffix}")
                    (dest / new).rename(dest / old)
                    (dest / new.parent).rmdir()
                    key = Path(f["object_key"]).parent
                    f = {**f, "path": str(old), "object_key": str(key.with_name(old.name))}
                files.append(f)
            params = {"video_id": op.video_id, "mark": (op.result or {}).get("mark")}
            op_id = book.record_op_intent(None, "backup", params, video_id=op.video_id, op_key=op.op_key)
            book.record_op_outcome(op_id, "done", {**(op.result or {}), "files": files})
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("materials/*") if p.is_file())


def test_a_backup_in_the_old_layout_still_restores_and_moves_to_the_new_one_when_its_materials_change(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    emu_control.set_variants(emu, ["materials-downloadable"])
    _library(tmp_path, emu_control, emu, clip_factory)
    talk = next(v for v in emu_control.videos(emu) if v["title"] == "Talk with materials")
    dest, ledger = tmp_path / "backup", tmp_path / "backup.db"
    assert backup(emu, str(dest), ledger).exit_code == 0
    old = _old_layout(ledger, dest)
    assert [Path(p).name for p in old] == sorted(
        f"{m['id']}{Path(m['original_name']).suffix}" for m in talk["additional_materials"]
    )

    # A rerun with nothing changed in the service keeps the old files (the video is not read again) and
    # the inventory names them: the restore works, the materials named by id as before.
    again = backup(emu, str(dest), ledger)
    assert again.exit_code == 0 and again.counts == {"unchanged": 2}
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("materials/*") if p.is_file()) == old
    assert all(p in (dest / "inventory.csv").read_text() for p in old)
    other, checked = _restore(tmp_path, emu_control, dest / "inventory.csv")
    restored = _materials(emu_control, other)["Talk with materials"]
    assert sorted(restored) == sorted(Path(p).name for p in old)
    assert [line.mark.value for line in checked.lines] == ["=", "="], [x.text() for x in checked.lines]

    # A new material on the video: the files step saves every material under the new names and removes
    # the files of its previous result it no longer names (the old ones).
    extra = b"# notes\n" * 50
    init = {"type": "attachment", "video_id": talk["id"], "filesize": len(extra), "filename": "notes.md"}
    answer = httpx.post(f"{emu.upload_url}/v2/init", json=init, headers=emu.headers).json()["data"]
    assert httpx.post(answer["endpoint"], content=extra).status_code == 204
    third = backup(emu, str(dest), ledger)
    assert third.exit_code == 0, third.reasons
    kept = sorted(str(p.relative_to(dest)) for p in dest.rglob("materials/*/*") if p.is_file())
    assert sorted(Path(p).name for p in kept) == ["handout.txt", "notes.md", "slides.pdf"]
    assert not any((dest / p).exists() for p in old)
    (tmp_path / "restore.db").unlink()
    other, checked = _restore(tmp_path, emu_control, dest / "inventory.csv")
    assert sorted(_materials(emu_control, other)["Talk with materials"]) == [
        "handout.txt",
        "notes.md",
        "slides.pdf",
    ]
    assert [line.mark.value for line in checked.lines] == ["=", "="], [x.text() for x in checked.lines]


def test_a_material_name_is_made_safe() -> None:
    assert safe_name("slides.pdf") == "slides.pdf"
    assert safe_name("../../etc/passwd") == "_.._etc_passwd"
    assert safe_name("..") == "" and safe_name(None) == "" and safe_name(" . ") == ""
    assert safe_name("a\x00b\nc\u200b.txt") == "a b c .txt"
    long = safe_name("ж" * 200 + ".pdf")
    assert long.endswith(".pdf") and len(long.encode()) <= 120

"""migrate's attachments column: each file (local or s3://) made a material of the item's video once, after
the video exists, through a lost answer; in the report; and in check (a material missing is a difference)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import boto3

from tests.flows.helpers import options, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import run_check
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger
from videoferry.tasks.sessions import attach_files
from videoferry.tasks.stop import Stop

#: The tus chunk of these tests: each material is a few chunks.
CHUNK = 8 * 1024


def _materials(emu_control: EmulatorControl, emu: Workspace, title: str) -> list[tuple[str, int]]:
    """(name, size) of the materials of the video with this title, as the service holds them."""
    video = next(v for v in emu_control.videos(emu) if v["title"] == title)
    return sorted((m["original_name"], m["file_size"]) for m in video.get("additional_materials") or [])


def _check(inventory: Path, emu: Workspace, ledger: Path) -> Any:
    opts = CheckOptions(inventory=str(inventory), ledger=str(ledger), parent_id=emu.project_id)
    return run_check(opts, settings_for(emu))


def test_materials_are_attached_once_through_a_lost_answer_reported_and_checked(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any, s3_bucket: str
) -> None:
    slides = tmp_path / "slides.pdf"
    slides.write_bytes(b"%PDF" + bytes(range(256)) * 100)
    notes = b"notes " * 5000
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket=s3_bucket, Key="handouts/notes.txt", Body=notes
    )
    rows = [
        {
            "source": str(clip_factory(1.0, name="talk.mp4")),
            "title": "Talk with slides",
            "attachments": f"slides.pdf | s3://{s3_bucket}/handouts/notes.txt",
        },
        {"source": str(clip_factory(1.0, name="plain.mp4")), "title": "Plain talk", "attachments": ""},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    # Single-request uploads: the only /v2/init calls are the materials'. The first is made by the service
    # and its answer lost: the video is read (nothing attached yet), the call made again, each file once.
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1}])
    ledger = tmp_path / "ledger.db"
    opts = options(inventory, emu, tmp_path, via="single", chunk_size=CHUNK, report_dir=str(tmp_path / "rep"))
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.summary["counts"]["finished"] == 2
    expected = sorted([("slides.pdf", slides.stat().st_size), ("notes.txt", len(notes))])
    assert _materials(emu_control, emu, "Talk with slides") == expected
    assert _materials(emu_control, emu, "Plain talk") == []
    with Ledger.open(ledger, create=False) as book:
        (talk,) = [i for i in book.items() if i.spec.title == "Talk with slides"]
        assert talk.spec.attachments == (str(slides), f"s3://{s3_bucket}/handouts/notes.txt")
        ops = book.ops(op_key=f"finish:{talk.key}:attach")
        assert [o.status for o in ops] == ["void", "done"]
        assert ops[-1].result == {"sent": ["slides.pdf", "notes.txt"], "present": []}
    assert outcome.summary["attachments"] == {"materials": 2, "attached": 2}
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    shown = {r["title"]: r["attachments"] for r in report["items"]}
    assert shown == {"Talk with slides": "slides.pdf, notes.txt", "Plain talk": None}

    # check: the same materials are the same; one the video does not hold is a difference.
    checked = _check(inventory, emu, ledger)
    assert [line.mark.value for line in checked.lines] == ["=", "="], [x.text() for x in checked.lines]
    (tmp_path / "extra.pdf").write_bytes(b"%PDF extra")
    rows[0]["attachments"] += " | extra.pdf"
    more = write_inventory(tmp_path / "more.csv", rows)
    checked = _check(more, emu, ledger)
    talk_line = next(line for line in checked.lines if line.title == "Talk with slides")
    assert talk_line.mark.value == "*" and talk_line.fields == ("attachments",)
    assert checked.exit_code != 0


def test_an_answer_lost_twice_fails_the_item_and_a_rerun_attaches_what_is_missing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    first, second = tmp_path / "a.pdf", tmp_path / "b.txt"
    first.write_bytes(b"%PDF" * 3000)
    second.write_bytes(b"b" * 5000)
    rows = [{"source": str(clip_factory(1.0, name="t.mp4")), "title": "Talk", "attachments": "a.pdf|b.txt"}]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    opts = options(inventory, emu, tmp_path, via="single", chunk_size=CHUNK)
    # Both inits of the first material committed, both answers lost: the item fails naming it, nothing sent.
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 2}])
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 1
    with Ledger.open(tmp_path / "ledger.db", create=False) as book:
        (item,) = book.items()
        assert item.state == "failed" and "answer was lost 2 times" in (item.error_message or "")
    assert _materials(emu_control, emu, "Talk") == []
    emu_control.set_faults(emu, [])
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert _materials(emu_control, emu, "Talk") == [("a.pdf", 12000), ("b.txt", 5000)]
    assert len(emu_control.videos(emu)) == 1


def test_a_service_that_tidies_file_names_gets_each_material_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """A file name as a Mac's disk writes it (NFD) with a double space: a service that keeps names tidied
    (NFC, one space) holds it in another form. The material is still the one asked for: check says `=`, and
    attaching again (a rerun after a crash before the outcome was written) sends nothing."""
    emu_control.set_variants(emu, ["tidy-text"])
    name = unicodedata.normalize("NFD", "Folien  Über Größen.pdf")
    (tmp_path / name).write_bytes(b"%PDF" * 2000)
    rows = [{"source": str(clip_factory(1.0, name="t.mp4")), "title": "Talk", "attachments": name}]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    outcome = run_migration(
        options(inventory, emu, tmp_path, via="single", chunk_size=CHUNK), settings_for(emu)
    )
    assert outcome.exit_code == 0, outcome.reasons
    assert _materials(emu_control, emu, "Talk") == [("Folien Über Größen.pdf", 8000)]  # kept tidied
    checked = _check(inventory, emu, tmp_path / "ledger.db")
    assert [line.mark.value for line in checked.lines] == ["="], [x.text() for x in checked.lines]
    (video,) = emu_control.videos(emu)
    with VideoClient(emu.base_url, emu.upload_url, emu.token) as client:
        again = attach_files(
            client, video["id"], [str(tmp_path / name)], s3=None, chunk_size=CHUNK, stop=Stop()
        )
    assert again.sent == [] and again.present == [name]
    assert _materials(emu_control, emu, "Talk") == [("Folien Über Größen.pdf", 8000)]

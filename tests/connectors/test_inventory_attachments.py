"""The inventory's attachments column: paths and s3:// joined by `|` or in a JSON list, relative ones
resolved like a source, a bad value refused naming its row and field while the other rows stay good."""

from __future__ import annotations

import json
from pathlib import Path

from tests.connectors.test_inventory import PARENT, write_csv
from videoferry.connectors.inventory import read_inventory

HEADER = ["source", "title", "attachments"]


def test_attachments_in_both_forms_become_item_specs(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    slides = tmp_path / "docs" / "slides.pdf"
    slides.write_bytes(b"%PDF")
    notes = tmp_path / "notes.txt"
    notes.write_text("n")
    rows = [
        {"source": "a.mp4", "attachments": f"docs/slides.pdf | {notes} | s3://bucket/x/handout.zip"},
        {"source": "b.mp4", "attachments": json.dumps([str(notes), "docs/slides.pdf", str(notes)])},
        {"source": "c.mp4", "attachments": ""},
    ]
    inventory = read_inventory(str(write_csv(tmp_path / "inv.csv", rows, HEADER)), default_parent_id=PARENT)
    assert inventory.errors == []
    by_source = {Path(s.source).name: s.attachments for s in inventory.specs()}
    assert by_source == {
        "a.mp4": (str(slides), str(notes), "s3://bucket/x/handout.zip"),
        "b.mp4": (str(notes), str(slides)),  # a duplicate dropped, order kept
        "c.mp4": (),
    }


def test_a_bad_attachment_names_its_row_and_field_and_the_rest_stay(tmp_path: Path) -> None:
    (tmp_path / "ok.pdf").write_bytes(b"ok")
    rows = [
        {"source": "a.mp4", "attachments": "ok.pdf"},
        {"source": "b.mp4", "attachments": "ok.pdf|gone.pdf"},
        {"source": "c.mp4", "attachments": "https://cdn.example.test/m.pdf?sig=SECRET"},
        {"source": "d.mp4", "attachments": "[not json"},
        {"source": "e.mp4", "attachments": " | "},
    ]
    inventory = read_inventory(str(write_csv(tmp_path / "inv.csv", rows, HEADER)), default_parent_id=PARENT)
    errors = {e.row or 0: e for e in inventory.errors}
    assert sorted(errors) == [2, 3, 4, 5]
    assert {e.field for e in errors.values()} == {"attachments"}
    assert "item 2 (gone.pdf): no such file" in errors[2].reason
    assert "no URL fetch" in errors[3].reason
    assert "SECRET" not in str(errors[3]) and "SECRET" not in errors[3].value
    assert "no attachment given" in errors[5].reason
    assert [s.row for s in inventory.specs()] == [1]

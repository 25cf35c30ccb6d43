"""apply attach: files (local and s3://) become additional materials of a video, each exactly once: a lost
init answer is looked up on the video, a rerun finds them there, a bad path is refused naming its row."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.flows.apply_fixtures import upload_requests, uploaded_video, write_ops
from tests.flows.helpers import settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup

#: The tus chunk of these tests: each material is a few chunks.
CHUNK = 8 * 1024


def _materials(emu_control: EmulatorControl, emu: Workspace, video_id: str) -> list[tuple[str, int]]:
    """(name, size) of the video's additional materials as the service holds them."""
    video = next(v for v in emu_control.videos(emu) if v["id"] == video_id)
    return sorted((m["original_name"], m["file_size"]) for m in video.get("additional_materials") or [])


def _apply(tmp_path: Path, emu: Workspace, rows: list[dict[str, str]], ledger: Path) -> Any:
    ops = write_ops(tmp_path / "ops.csv", rows)
    opts = ApplyOptions(
        ops=str(ops), ledger=str(ledger), wait_timeout=60, chunk_size=CHUNK
    )
    return run_apply(opts, settings_for(emu))


def test_attachments_are_sent_once_through_a_lost_answer_and_a_rerun(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", 2.0)
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0))
    slides = tmp_path / "slides.pdf"
    slides.write_bytes(b"%PDF" + bytes(range(256)) * 100)
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket=s3_bucket, Key="handouts/notes.txt", Body=b"notes " * 5000
    )
    attachments = f'["{slides}", "s3://{s3_bucket}/handouts/notes.txt"]'
    row = {"op": "attach", "id": "mats", "target": video_id, "attachments": attachments}
    row["additional_materials_enabled"] = "true"
    # The first attachment's init is made by the service and its answer lost: nothing attached yet, the
    # video is read after the settle time, the call is made again and sends what is missing, once each.
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1}])
    ledger = tmp_path / "ledger.db"
    first = time.time()
    outcome = _apply(tmp_path, emu, [row], ledger)
    assert outcome.exit_code == 0, outcome.reasons
    # Sessions just opened get their PATCHes with no HEAD before them (the lost init's was never used).
    sent = [r["method"] for r in upload_requests(emu_control, emu, first) if r["path"] == "endpoint"]
    assert sent and set(sent) == {"PATCH"}
    expected = sorted([("slides.pdf", slides.stat().st_size), ("notes.txt", len(b"notes " * 5000))])
    assert _materials(emu_control, emu, video_id) == expected
    assert next(v for v in emu_control.videos(emu) if v["id"] == video_id)["additional_materials_enabled"]
    with Ledger.open(ledger, create=False) as book:
        assert [o.status for o in book.ops(op_key="mats")] == ["void", "done"]
        unit = book.unit("mats")
    assert unit is not None and unit.state == "done" and unit.detail == "2 attached"
    # The same files under another operation id: found on the video, nothing sent.
    since = time.time()
    again = dict(row, id="mats-again")
    outcome = _apply(tmp_path, emu, [again], ledger)
    assert outcome.exit_code == 0, outcome.reasons
    assert _materials(emu_control, emu, video_id) == expected
    assert [r for r in upload_requests(emu_control, emu, since) if r["path"] == "/v2/init"] == []
    with Ledger.open(ledger, create=False) as book:
        unit = book.unit("mats-again")
    assert unit is not None and unit.detail == "2 already there"


def test_a_missing_attachment_is_refused_naming_row_and_field(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    video_id = uploaded_video(emu, emu_control, clip_factory(1.0))
    there = tmp_path / "there.pdf"
    there.write_bytes(b"x" * 100)
    rows = [
        {"op": "attach", "id": "ok", "target": video_id, "attachments": str(there)},
        {"op": "attach", "id": "bad", "target": video_id, "attachments": f"{there}|{tmp_path / 'gone.pdf'}"},
    ]
    outcome = _apply(tmp_path, emu, rows, tmp_path / "ledger.db")
    assert outcome.exit_code == 1
    refused = " ".join(outcome.refused)
    assert (
        "row 2" in refused and "attachments" in refused and "item 2" in refused and "no such file" in refused
    )
    assert _materials(emu_control, emu, video_id) == [("there.pdf", 100)]  # the other row went on

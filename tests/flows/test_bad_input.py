"""Bad input: every case gets a clear error naming the row, field or file, and the good rows still finish."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.flows.helpers import cli_env, clip_rows, creates, options, run_cli, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.errors import LedgerError
from videoferry.state.ledger import Ledger
from videoferry.state.models import Item


def _items(ledger: Path) -> dict[int, Item]:
    book = Ledger.open(ledger, create=False)
    try:
        return {item.spec.row or 0: item for item in book.items()}
    finally:
        book.close()


def _assert_good_rows_finished(
    ledger: Path, rows: list[int], control: EmulatorControl, ws: Workspace
) -> None:
    items = _items(ledger)
    assert {r: items[r].state for r in rows} == {r: "finished" for r in rows}
    videos = {v["id"]: v for v in control.videos(ws)}
    for r in rows:
        assert videos[items[r].video_id or ""]["status"] == "done"


def _cli(args: list[str], ws: Workspace | None) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cli_env(ws), timeout=240)


def test_missing_file_names_the_file_and_its_row(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    missing = tmp_path / "gone" / "holiday-2019.mp4"
    rows = [*clip_rows(clip_factory, 2, metadata=False), {"source": str(missing), "title": "gone"}]
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 1
    item = _items(tmp_path / "ledger.db")[3]
    assert (item.state, item.error_code) == ("failed", "source")
    assert str(missing) in (item.error_message or "")
    assert any(  # named by its source, then row and key
        line.strip().startswith(f"{missing} (row 3, key ") for line in outcome.reasons
    ), outcome.reasons
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 2], emu_control, emu)


def test_unreadable_s3_objects_name_the_object(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, s3_bucket: str
) -> None:
    from videoferry.connectors.s3 import shared_s3_client

    shared_s3_client().upload_file(str(clip_factory(1.0, name="ok.mp4")), s3_bucket, "v/ok.mp4")
    rows = [
        {"source": f"s3://{s3_bucket}/v/ok.mp4", "title": "s3 ok"},
        {"source": f"s3://{s3_bucket}/v/absent.mp4", "title": "no such key"},
        {"source": f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/v/x.mp4", "title": "no such bucket"},
    ]
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 1
    items = _items(tmp_path / "ledger.db")
    for row in (2, 3):
        assert (items[row].state, items[row].error_code) == ("failed", "source")
        assert rows[row - 1]["source"] in (items[row].error_message or "")
    _assert_good_rows_finished(tmp_path / "ledger.db", [1], emu_control, emu)
    assert len(emu_control.videos(emu)) == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_url_ends_in_error_with_a_reason(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/videos/lost.mp4"
    rows = [*clip_rows(clip_factory, 2, metadata=False), {"source": url, "title": "unreachable"}]
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 1
    item = _items(tmp_path / "ledger.db")[3]
    assert (item.state, item.error_code) == ("error", "video_error")
    assert item.error_message and "error" in item.error_message
    assert any(
        "lost.mp4 (row 3, key " in line and "): error video_error" in line for line in outcome.reasons
    ), outcome.reasons
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 2], emu_control, emu)


def test_malformed_rows_are_named_by_row_and_field(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    def clip() -> str:
        return str(clip_factory(0.5, name="bad.mp4"))

    rows = [
        *clip_rows(clip_factory, 2, metadata=False),
        {"source": clip(), "title": "bad tags", "tags": '["a", "b"'},
        {"source": clip(), "title": "bad privacy", "privacy_type": "public"},
        {"source": clip(), "title": "bad parent", "parent_id": "not-a-uuid"},
        {"source": clip(), "title": "bad chapter time", "chapters": '[{"time": "1:75", "title": "x"}]'},
        {"source": "ftp://example.invalid/x.mp4", "title": "bad scheme"},
    ]
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 1
    assert {(r["row"], r["field"]) for r in outcome.rejected} == {
        (3, "tags"),
        (4, "privacy_type"),
        (5, "parent_id"),
        (6, "chapters"),
        (7, "source"),
    }
    text = "\n".join(outcome.reasons)
    for row, field in ((3, "tags"), (4, "privacy_type"), (5, "parent_id"), (6, "chapters"), (7, "source")):
        assert f"row {row}, field {field}:" in text
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 2], emu_control, emu)
    assert len(emu_control.videos(emu)) == 2


def test_a_broken_json_lines_record_is_named_by_its_line(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    good = clip_rows(clip_factory, 2, metadata=False)
    lines = [json.dumps(good[0]), '{"source": "x.mp4", "title": ', json.dumps(good[1])]
    inventory = tmp_path / "inv.jsonl"
    inventory.write_text("\n".join(lines) + "\n", encoding="utf-8")
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 1
    assert [(r["row"], r["field"]) for r in outcome.rejected] == [(2, "record")]
    assert "row 2, field record: invalid JSON" in "\n".join(outcome.reasons)
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 3], emu_control, emu)


def test_duplicate_keys_keep_the_first_row_only(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = clip_rows(clip_factory, 3, metadata=False)
    rows[0]["key"], rows[1]["key"], rows[2]["key"] = "lecture-1", "lecture-2", "lecture-1"
    rows.append({"source": rows[1]["source"], "title": "same file again", "key": ""})
    rows.append({"source": rows[1]["source"], "title": "and again", "key": ""})
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 1
    reasons = {r["row"]: (r["field"], r["reason"]) for r in outcome.rejected}
    assert reasons[3] == ("key", "duplicate key (first used at row 1)")
    assert reasons[5][0] == "key" and "first at row 4" in reasons[5][1]
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 2, 4], emu_control, emu)
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(
        [rows[0]["title"], rows[1]["title"], "same file again"]
    )


def test_unknown_parent_id_fails_its_items_once_with_the_code(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    unknown = str(uuid.uuid4())
    rows = clip_rows(clip_factory, 4, metadata=False)
    rows[1]["parent_id"] = rows[2]["parent_id"] = unknown
    mark = time.time()
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path, transfers=1), settings_for(emu)
    )
    assert outcome.exit_code == 1
    items = _items(tmp_path / "ledger.db")
    for row in (2, 3):
        assert (items[row].state, items[row].error_code) == ("failed", "400236")
        assert f"parent_id {unknown}" in (items[row].error_message or "")
    assert any(
        "(row 2, key " in line and "): failed 400236" in line and unknown in line for line in outcome.reasons
    )
    refused = [r for r in creates(emu_control, emu, since=mark) if r["status"] == 400]
    assert len(refused) == 1  # the second item under that parent is not sent again; nothing is retried
    _assert_good_rows_finished(tmp_path / "ledger.db", [1, 4], emu_control, emu)


LONG_LATIN = ("A very long title, " * 150).strip()  # ~2,800 characters
LONG_CJK = "長い題名の動画" * 400  # 2,800 characters, 8,400 bytes of UTF-8


@pytest.mark.parametrize("via", ["tus", "single"])
def test_non_latin1_and_very_long_titles_arrive_exactly(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, via: str
) -> None:
    titles = ["Лекция №1 — введение", "第2回 東京 🎬", "Ελληνικά ß ø", LONG_LATIN, LONG_CJK]
    rows = [{"source": str(clip_factory(0.5, name=f"t{i}.mp4")), "title": t} for i, t in enumerate(titles)]
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path, via=via), settings_for(emu)
    )
    assert outcome.exit_code == 0, outcome.reasons
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(titles)


def test_a_very_long_title_survives_a_create_whose_answer_was_lost(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    rows = [{"source": str(clip_factory(0.5, name="long.mp4")), "title": LONG_CJK}]
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/init$", "times": 1}])
    outcome = run_migration(
        options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path), settings_for(emu)
    )
    assert outcome.exit_code == 0, outcome.reasons
    (video,) = emu_control.videos(emu)
    assert video["title"] == LONG_CJK and video["status"] == "done"


@pytest.mark.parametrize("content", ["", "source,title\n"], ids=["empty-file", "header-only"])
def test_an_empty_inventory_is_named(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, content: str
):
    inventory = tmp_path / "empty.csv"
    inventory.write_text(content, encoding="utf-8")
    mark = time.time()
    outcome = run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    assert outcome.exit_code == 1
    assert any(str(inventory) in line and "no rows" in line for line in outcome.reasons), outcome.reasons
    assert creates(emu_control, emu, since=mark) == []


def test_a_corrupt_ledger_is_named_and_left_alone(tmp_path: Path, emu: Workspace, clip_factory) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    ledger = tmp_path / "ledger.db"
    garbage = b"this is not a database, just some bytes\x00\xff" * 100
    ledger.write_bytes(garbage)
    with pytest.raises(LedgerError, match=str(ledger)):
        run_migration(options(inventory, emu, tmp_path), settings_for(emu))
    result = _cli(
        ["migrate", str(inventory), "--no-prefect", "--parent-id", emu.project_id, "--ledger", str(ledger)],
        emu,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(ledger) in result.stderr and "not a valid videoferry ledger" in result.stderr
    assert ledger.read_bytes() == garbage


def test_a_ledger_held_by_another_run_is_named(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    ledger = tmp_path / "ledger.db"
    holder = Ledger.open(ledger)
    holder.start_run("migrate", {})
    try:
        mark = time.time()
        result = _cli(
            [
                "migrate",
                str(inventory),
                "--no-prefect",
                "--parent-id",
                emu.project_id,
                "--ledger",
                str(ledger),
            ],
            emu,
        )
    finally:
        holder.close()
    assert result.returncode == 2, result.stdout + result.stderr
    assert str(ledger) in result.stderr and "in use by another run" in result.stderr
    assert creates(emu_control, emu, since=mark) == []

"""Operations in the report files and in `status`: real apply runs, one unit done and one failed."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import polars as pl

from tests.flows.apply_fixtures import run_vf, wait_done, write_ops
from tests.flows.helpers import settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply
from videoferry.state.ledger import Ledger

MISSING = "00000000-0000-0000-0000-000000000000"
FILES = (
    "items.csv",
    "summary.csv",
    "operations.csv",
    "items.parquet",
    "summary.parquet",
    "operations.parquet",
    "report.json",
    "report.html",
)


def _apply(tmp_path: Path, emu: Workspace, ledger: Path, target: str, out: Path) -> list[str]:
    """Apply one update that succeeds (on `target`) and one on a video that does not exist; the files."""
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "update", "id": "tag", "target": target, "tags": "reviewed"},
            {"op": "update", "id": "ghost", "target": MISSING, "tags": "never"},
        ],
    )
    opts = ApplyOptions(
        ops=str(ops), ledger=str(ledger), wait_timeout=120, report_dir=str(out)
    )
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 1, outcome.reasons + outcome.refused
    assert outcome.counts == {"done": 1, "failed": 1}
    return outcome.report_files


def _secrets(emu: Workspace, ledger: Path) -> list[bytes]:
    """The token and every upload endpoint the ledger holds: none may reach a report or the output."""
    with Ledger.open(ledger, create=False) as book:
        endpoints = [i.upload_endpoint for i in book.items() if i.upload_endpoint]
    return [s.encode() for s in (emu.token, *endpoints)]


def test_report_files_and_status_show_operations(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    key, video = next(iter(library["keys"].items()))
    ledger: Path = library["ledger"]
    wait_done(emu_control, emu)
    out = tmp_path / "report"
    files = _apply(tmp_path, emu, ledger, f"key:{key}", out)
    assert "reviewed" in next(v for v in emu_control.videos(emu) if v["id"] == video)["tags"]
    assert sorted(Path(f).name for f in files) == sorted(FILES)
    secrets = _secrets(emu, ledger)
    for name in FILES:
        data = (out / name).read_bytes()
        assert not [s for s in secrets if s in data], name

    with (out / "operations.csv").open(encoding="utf-8", newline="") as handle:
        rows = {r["op_id"]: r for r in csv.DictReader(handle)}
    states = {k: (r["row"], r["state"]) for k, r in rows.items()}
    assert states == {"tag": ("1", "done"), "ghost": ("2", "failed")}
    tag = rows["tag"]
    assert (tag["video_id"], tag["result_id"], tag["detail"]) == (video, video, "updated")
    assert tag["error_code"] == ""
    assert rows["ghost"]["video_id"] == MISSING and rows["ghost"]["error_code"] == "400404"
    assert "not found" in rows["ghost"]["error_message"]

    frame = pl.read_parquet(out / "operations.parquet")
    assert dict(zip(frame["op_id"], frame["state"], strict=True)) == {"tag": "done", "ghost": "failed"}
    assert frame.schema["row"] == pl.Int64 and frame["kind"].to_list() == ["update", "update"]

    document = json.loads((out / "report.json").read_text(encoding="utf-8"))
    by_op = {u["op_id"]: u for u in document["operations"]}
    assert (by_op["tag"]["state"], by_op["ghost"]["state"]) == ("done", "failed")
    assert by_op["ghost"]["error_code"] == "400404" and by_op["tag"]["params"] == "tags=[reviewed]"
    operations = document["summary"]["operations"]
    assert operations["units"] == 2 and operations["error_codes"] == {"400404": 1}
    assert {s: n for s, n in operations["counts"].items() if n} == {"done": 1, "failed": 1}
    assert len(document["items"]) == 2  # the migrated items are still there

    summary = pl.read_csv(out / "summary.csv", infer_schema_length=0)
    metrics = dict(zip(summary["metric"], summary["value"], strict=True))
    assert (metrics["operations.counts.done"], metrics["operations.counts.failed"]) == ("1", "1")

    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Items</h2>" in page and "<h2>Operations</h2>" in page
    assert page.index("<h2>Items</h2>") < page.index("<h2>Operations</h2>")
    assert "operations: 2 (done 1, failed 1)" in page
    assert f"<td>{MISSING}</td>" in page and "<td>400404: " in page and "<td>updated</td>" in page

    shown = run_vf(["status", "--ledger", str(ledger)], emu)
    text = shown.stdout + shown.stderr
    assert shown.returncode == 1, text  # the items are done, one operation failed
    assert "items: 2 (finished 2)" in shown.stdout
    assert "operations: 2 (done 1, failed 1)" in shown.stdout
    failed = [line for line in shown.stdout.splitlines() if "ghost" in line]
    assert len(failed) == 1 and "row 2 update ghost: failed 400404: " in failed[0], text
    assert "not found" in failed[0] and "row 1 update tag" not in shown.stdout
    as_json = run_vf(["status", "--ledger", str(ledger), "--json"], emu)
    assert json.loads(as_json.stdout)["operations"]["counts"]["failed"] == 1
    assert not [s for s in secrets if s in (text + as_json.stdout + as_json.stderr).encode()]


def test_ledger_used_only_by_apply(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, library: dict[str, Any]
) -> None:
    ledger = tmp_path / "apply-only.db"
    wait_done(emu_control, emu)
    _apply(tmp_path, emu, ledger, library["videos"]["Intro A"], tmp_path / "first")

    out = tmp_path / "report"
    written = run_vf(["report", "--ledger", str(ledger), "--out", str(out)], emu)
    assert written.returncode == 0, written.stdout + written.stderr
    assert written.stdout.startswith("operations: 2 (done 1, failed 1)\noperation error codes: 400404 x1\n")
    assert "items:" not in written.stdout and "bytes uploaded" not in written.stdout
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h1>videoferry operations report</h1>" in page and "1 of 2 operations done." in page
    assert "Items by state" not in page and "<h2>Items</h2>" not in page and "No items." not in page
    assert f"<td>{library['videos']['Intro A']}</td>" in page and "<td>failed</td>" in page
    assert pl.read_parquet(out / "operations.parquet").height == 2
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["items"] == []
    for path in out.iterdir():
        assert emu.token.encode() not in path.read_bytes(), path.name

    shown = run_vf(["status", "--ledger", str(ledger)], emu)
    assert shown.returncode == 1 and "row 2 update ghost: failed 400404" in shown.stdout
    assert emu.token not in shown.stdout + shown.stderr + written.stdout + written.stderr

"""Reports from a real ledger: every format written, secrets and signed URLs kept out, charts drawn."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from core.redact import safe_uri
from flows.ledger_report import FORMATS, build_report, markdown, render_html, write_ledger_report
from state.ledger import Ledger
from tasks.migrate.report import items_html
from tests.state.helpers import spec

ENDPOINT = "http://127.0.0.1:9/upload/abc/SECRET-CAPABILITY"


def _ledger(tmp_path: Path) -> Ledger:
    ledger = Ledger.open(tmp_path / "l.db")
    run = ledger.start_run("migrate", {"parent_id": "P1", "inventory": "inv.csv"})
    rows = [
        spec("a", 1, source="/v/a.mp4", title="Лекция", via="tus", source_size=10),
        spec("b", 2, source="https://cdn.example/b.mp4?X-Amz-Signature=deadbeef", via="url"),
    ]
    ledger.plan(rows, run)
    ledger.begin_create("a", run, "Лекция")
    ledger.create_started_upload("a", run, "11111111-1111-1111-1111-111111111111", ENDPOINT, 10)
    ledger.upload_complete("a", run)
    ledger.set_status("a", run, "done")
    ledger.finished("a", run)
    ledger.begin_create("b", run, "b")
    ledger.create_accepted("b", run, "22222222-2222-2222-2222-222222222222")
    ledger.set_status("b", run, "error", "file unreachable")
    ledger.finish_run(run, "incomplete", {})
    return ledger


def test_every_format_without_secrets(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    try:
        report = build_report(
            ledger, rejected=[{"row": 3, "field": "source", "value": "", "reason": "missing"}]
        )
    finally:
        ledger.close()
    files = write_ledger_report(report, tmp_path / "out", FORMATS)
    assert {p.name for p in files} == {
        "items.csv",
        "summary.csv",
        "items.parquet",
        "summary.parquet",
        "report.json",
        "report.html",
    }
    for path in files:
        data = path.read_bytes()
        assert b"SECRET-CAPABILITY" not in data
        assert b"deadbeef" not in data
    items = pl.read_parquet(tmp_path / "out" / "items.parquet")
    assert dict(zip(items["key"], items["state"], strict=True)) == {"a": "finished", "b": "error"}
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    assert document["summary"]["counts"]["error"] == 1
    assert document["rejected"][0]["row"] == 3
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Лекция" in page and "<svg" in page and "Rejected inventory rows" in page
    # one completion: a sentence, not a chart of one point
    assert "1 items done and 0.00 MB uploaded, the last 0.0 s after the first: too short a run" in page
    # a person finds each item by its source, and the page says which run it is and where it went
    assert "<th>source</th>" in page and "<td>/v/a.mp4</td>" in page
    assert "<title>videoferry migration report</title>" in page
    assert "last run: migrate " in page and ", incomplete; destination: project/folder P1" in page
    # the Prefect summary artifact names the failed item by its source (a URL without its signature)
    summary = markdown(report)
    assert "## Failed items\n\n- https://cdn.example/b.mp4 (row 2, key b): error" in summary, summary
    assert "deadbeef" not in summary


def test_redact_url_drops_query_and_credentials() -> None:
    assert safe_uri("https://user:pw@h.example:8443/p/v.mp4?sig=1#x") == "https://h.example:8443/p/v.mp4"
    assert safe_uri("s3://bucket/key.mp4") == "s3://bucket/key.mp4"


def test_empty_report_renders(tmp_path: Path) -> None:
    ledger = Ledger.open(tmp_path / "empty.db")
    try:
        page = render_html(build_report(ledger))
    finally:
        ledger.close()
    assert "No items." in page


def test_the_throughput_chart_is_drawn_for_a_run_that_lasts() -> None:
    start = datetime(2026, 11, 26, 1, 0, tzinfo=UTC)
    timeline = pl.DataFrame(
        {
            "time": [start + timedelta(seconds=s) for s in (0, 30, 90)],
            "done": [1, 2, 3],
            "bytes": [1e6, 2e6, 3e6],
        }
    )
    page = items_html({"counts": {"finished": 3}}, timeline, pl.DataFrame(), "")
    assert "items done (of 3)" in page and "+90 s" in page and "too short" not in page

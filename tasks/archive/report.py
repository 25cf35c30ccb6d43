"""The archive's reports: the columns of a run's report (tasks/copying/run_report.py writes it) and the
ledger's archive section (status, report)."""

from __future__ import annotations

import html
from typing import Any

import polars as pl

from state.machine import OpStatus
from state.reader import LedgerReader

__all__ = [
    "ARCHIVE_COLUMNS",
    "ARCHIVE_STEPS",
    "archive_frame",
    "archive_html",
    "archive_lines",
    "archive_summary",
    "RUN_COLUMNS",
]

#: The run report's columns (archive.csv: one row per recording the run saw).
RUN_COLUMNS: dict[str, type[pl.DataType]] = {
    "event_id": pl.String,
    "stream_id": pl.String,
    "video_id": pl.String,
    "state": pl.String,
    "reason": pl.String,
    "bytes": pl.Int64,
    "object_key": pl.String,
    "steps": pl.String,
}
#: The steps of one recording, in order (op_key archive:<video_id>:<step>).
ARCHIVE_STEPS = ("copy", "sidecars", "move", "tags", "delete")


def archive_summary(reader: LedgerReader) -> dict[str, Any] | None:
    """Recordings archived (copy verified), bytes, each step's done count, failed steps; None without any."""
    latest: dict[str, Any] = {}
    for op in reader.ops():
        key = op.op_key or ""
        if key.startswith("archive:") and key.rsplit(":", 1)[-1] in ARCHIVE_STEPS:
            latest[key] = op  # oldest first: the last one wins
    if not latest:
        return None
    done = {step: 0 for step in ARCHIVE_STEPS}
    failed: list[dict[str, Any]] = []
    size = 0
    for key, op in latest.items():
        step = key.rsplit(":", 1)[-1]
        if op.status == OpStatus.DONE:
            done[step] += 1
            if step == "copy" and isinstance(op.result, dict):
                size += int(op.result.get("bytes") or 0)
        elif op.status == OpStatus.FAILED:
            failed.append({"op_key": key, "error_code": op.error_code, "error_message": op.error_message})
    return {"recordings": done["copy"], "bytes": size, "steps": done, "failed": failed}


def archive_lines(summary: dict[str, Any] | None) -> list[str]:
    """`archive: 6 recordings archived (1.2 MB), moved 6, deleted 0` and one line per failed step."""
    if not summary:
        return []
    steps = summary["steps"]
    lines = [
        f"archive: {summary['recordings']} recordings archived ({summary['bytes']} bytes); "
        f"moved {steps['move']}, tagged {steps['tags']}, deleted {steps['delete']}"
    ]
    lines += [
        f"  {f['op_key']}: failed {f['error_code'] or ''} {f['error_message'] or ''}"
        for f in summary["failed"]
    ]
    return lines


#: The archive table's columns (one row per recording whose copy is verified).
ARCHIVE_COLUMNS = (
    "event_id", "event_name", "stream_id", "video_id", "title", "quality", "bytes", "md5", "object_key",
    "archived_at",
)  # fmt: skip


def archive_frame(reader: LedgerReader) -> pl.DataFrame:
    """One row per archived recording (its latest verified copy): event, stream, video, bytes, md5, key."""
    latest: dict[str, Any] = {}
    for op in reader.ops(kind="archive"):
        if (op.op_key or "").endswith(":copy"):
            latest[op.op_key or ""] = op
    rows = [
        {c: (op.result or {}).get(c) for c in ARCHIVE_COLUMNS}
        for op in latest.values()
        if op.status == OpStatus.DONE and isinstance(op.result, dict)
    ]
    schema = {c: (pl.Int64 if c == "bytes" else pl.String) for c in ARCHIVE_COLUMNS}
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def archive_html(frame: pl.DataFrame) -> str:
    """The report's archive section: bytes archived per event (bars) and the recordings; "" without any."""
    if frame.is_empty():
        return ""
    per_event = (
        frame.group_by("event_id", "event_name")
        .agg(pl.col("bytes").sum().alias("bytes"), pl.len().alias("recordings"))
        .sort("bytes", descending=True)
    )
    top = max([1, *(int(b or 0) for b in per_event["bytes"].to_list())])
    bars = "".join(
        f"<tr><td>{html.escape(str(r['event_name'] or r['event_id']))}</td><td>{r['recordings']}</td>"
        f'<td>{r["bytes"]}</td><td><div style="background:#4a7;height:12px;'
        f'width:{300 * r["bytes"] // top}px"></div></td></tr>'
        for r in per_event.iter_rows(named=True)
    )
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v if v is not None else ''))}</td>" for v in row) + "</tr>"
        for row in frame.select(ARCHIVE_COLUMNS).iter_rows()
    )
    head = "".join(f"<th>{c}</th>" for c in ARCHIVE_COLUMNS)
    return (
        "<h2>Archived bytes per event</h2><table><thead><tr><th>event</th><th>recordings</th><th>bytes</th>"
        f"<th></th></tr></thead><tbody>{bars}</tbody></table>\n"
        f"<h2>Archived recordings</h2><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )

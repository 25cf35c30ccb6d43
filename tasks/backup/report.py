"""The backup's reports: the columns of a run's report (tasks/copying/run_report.py writes it) and the
ledger's backup section (status, report). Ids, states, sizes, md5 and paths only: no title, no link."""

from __future__ import annotations

import html
from typing import Any

import polars as pl

from state.machine import OpStatus
from state.reader import LedgerReader
from tasks.report_files import html_table

__all__ = ["BACKUP_COLUMNS", "RUN_COLUMNS", "backup_frame", "backup_html", "backup_lines", "backup_summary"]

#: The run report's columns (one row per video the run saw).
RUN_COLUMNS: dict[str, type[pl.DataType]] = {
    "video_id": pl.String,
    "state": pl.String,
    "reason": pl.String,
    "bytes": pl.Int64,
    "quality": pl.String,
    "md5": pl.String,
    "path": pl.String,
    "steps": pl.String,
    "notes": pl.String,
}
#: The ledger report's backup table: one row per video a destination holds (its latest verified copy).
BACKUP_COLUMNS: dict[str, type[pl.DataType]] = {
    "destination": pl.String,
    "video_id": pl.String,
    "state": pl.String,
    "quality": pl.String,
    "bytes": pl.Int64,
    "md5": pl.String,
    "path": pl.String,
    "backed_up_at": pl.String,
}


def _latest(reader: LedgerReader, status: str | None = None) -> dict[str, Any]:
    """The latest op (of this status) of every backup op key, in the order they were made."""
    latest: dict[str, Any] = {}
    for kind in ("backup", "backup_prune"):
        for op in reader.ops(kind=kind, status=status):
            latest[op.op_key or ""] = op
    return dict(sorted(latest.items(), key=lambda kv: kv[1].op_id))


def backup_frame(reader: LedgerReader) -> pl.DataFrame:
    """One row per video each destination holds: its file's quality, bytes, md5, path; deleted or moved when
    the service no longer has it (kept); pruned ones are gone."""
    steps: dict[tuple[str, str], dict[str, Any]] = {}
    for key, op in _latest(reader, OpStatus.DONE).items():
        parts = key.split(":")
        if len(parts) != 4 or not isinstance(op.result, dict):
            continue
        _, dest, video_id, step = parts
        entry = steps.setdefault((dest, video_id), {})
        entry[step] = op.result
        if step == "prune":  # its files were removed: what came before is no longer kept
            entry.pop("copy", None)
            entry.pop("gone", None)
    rows = []
    for (dest, video_id), entry in steps.items():
        copied = entry.get("copy")
        if copied is None:
            continue
        gone = entry.get("gone") or {}
        state = ("moved" if gone.get("moved") else "deleted") if gone.get("gone") else "present"
        rows.append(
            {"destination": dest, "video_id": video_id, "state": state}
            | {c: copied.get(c) for c in ("quality", "bytes", "md5", "path", "backed_up_at")}
        )
    return pl.DataFrame(rows, schema=BACKUP_COLUMNS) if rows else pl.DataFrame(schema=BACKUP_COLUMNS)


def backup_summary(reader: LedgerReader) -> dict[str, Any] | None:
    """Videos held (present, deleted or moved but kept), bytes, destinations, last index, failed steps; None
    when the ledger holds no backup."""
    latest = _latest(reader)
    if not latest:
        return None
    frame = backup_frame(reader)
    failed = [
        {"op_key": key, "error_code": op.error_code, "error_message": op.error_message}
        for key, op in latest.items()
        if op.status == OpStatus.FAILED
    ]
    counts = {s: int((frame["state"] == s).sum()) for s in ("present", "deleted", "moved")}
    return {
        "videos": frame.height,
        "bytes": int(frame["bytes"].fill_null(0).sum()),
        "destinations": frame["destination"].n_unique(),
        "states": counts,
        "failed": failed,
    }


def backup_lines(summary: dict[str, Any] | None) -> list[str]:
    """`backup: 12 videos kept (3400000 bytes) in 1 destination(s): 11 present, ...` and the failures."""
    if not summary:
        return []
    states = summary["states"]
    lines = [
        f"backup: {summary['videos']} videos kept ({summary['bytes']} bytes) in {summary['destinations']} "
        f"destination(s): {states['present']} present, {states['deleted']} deleted in the service, "
        f"{states['moved']} moved out"
    ]
    lines += [
        f"  {f['op_key']}: failed {f['error_code'] or ''} {f['error_message'] or ''}"
        for f in summary["failed"]
    ]
    return lines


def backup_html(frame: pl.DataFrame) -> str:
    """The report page's backup section: bytes per destination and state, then the videos; "" without any."""
    if frame.is_empty():
        return ""
    per = frame.group_by("destination", "state").agg(pl.len().alias("videos"), pl.col("bytes").sum())
    rows = "".join(
        f"<tr><td>{html.escape(str(r['destination']))}</td><td>{html.escape(str(r['state']))}</td>"
        f"<td>{r['videos']}</td><td>{r['bytes']}</td></tr>"
        for r in per.sort("destination", "state").iter_rows(named=True)
    )
    return (
        "<h2>Backup</h2><table><thead><tr><th>destination</th><th>state</th><th>videos</th><th>bytes</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>\n<h2>Backed-up videos</h2>"
        + html_table(frame, list(BACKUP_COLUMNS), noun="videos")
    )

"""Archived recordings as `status` and `report` show them: counts and bytes from the ledger's archive ops."""

from __future__ import annotations

from typing import Any

from state.machine import OP_DONE, OP_FAILED
from state.reader import LedgerReader

__all__ = ["archive_summary", "archive_lines", "ARCHIVE_STEPS"]

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
        if op.status == OP_DONE:
            done[step] += 1
            if step == "copy" and isinstance(op.result, dict):
                size += int(op.result.get("bytes") or 0)
        elif op.status == OP_FAILED:
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

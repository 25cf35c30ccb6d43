"""Check: the summary, the combined file and the report files (CSV, Parquet, JSON, HTML) of a check."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from videoferry.tasks.check.adopt import Adoption
from videoferry.tasks.check.compare import NO_ORIGINAL, TITLE_CUT, CheckLine, Mark, counts
from videoferry.tasks.private_files import private_dir, write_private
from videoferry.tasks.report_files import summary_frame, write_report_files

#: The check table's columns (CheckLine.report_row's keys).
CHECK_SCHEMA = pl.Schema(
    {
        "mark": pl.String(),
        "key": pl.String(),
        "row": pl.Int64(),
        "title": pl.String(),
        "video_id": pl.String(),
        "fields": pl.String(),
        "bytes_by": pl.String(),
        "note": pl.String(),
    }
)
#: Warnings the printed summary lists (the report has every one).
SHOWN_WARNINGS = 20
_WORDS = {
    "=": "same", "-": "missing", "+": "only in the service", "*": "differ", "!": "not checked",
    "~": "explained",
}  # fmt: skip


def summarize(
    items: Sequence[CheckLine],
    extras: Sequence[CheckLine],
    adoptions: Sequence[Adoption],
    *,
    one_way: bool = False,
    outside: int = 0,
) -> dict[str, Any]:
    """Counts by mark, how the bytes were compared, the fields that differ, and the adoptions; one_way (no
    `+` looked for) and outside (listed videos out of the `+` scope) as given. `match`: every line `=` or
    `~` (what the exit status follows)."""
    every = [*items, *extras]
    bytes_by: dict[str, int] = {}
    for line in items:
        if line.video_id is not None and line.mark in (Mark.SAME, Mark.DIFFERS, Mark.EXPLAINED):
            by = line.bytes_by or "not compared"
            bytes_by[by] = bytes_by.get(by, 0) + 1
    fields: dict[str, int] = {}
    for line in items:
        for name in line.fields:
            fields[name] = fields.get(name, 0) + 1
    summary: dict[str, Any] = {
        "items": len(items),
        "marks": counts(every),
        "bytes_compared_by": bytes_by,
        "no_original": sum(1 for line in items if NO_ORIGINAL in line.note),
        "fields_differing": dict(sorted(fields.items(), key=lambda kv: (-kv[1], kv[0]))),
        "match": all(line.mark in (Mark.SAME, Mark.EXPLAINED) for line in every),
        "warnings": [f"{line.key}: {TITLE_CUT}" for line in items if TITLE_CUT in line.note],
        "one_way": one_way,
        "outside": outside,
    }
    if adoptions:
        summary["adopted"] = sum(1 for a in adoptions if a.adopted)
        summary["left_to_migrate"] = sum(1 for a in adoptions if a.creates)
        summary["held"] = sum(1 for a in adoptions if not a.adopted and not a.creates)
        summary["migrate_writes"] = sum(1 for a in adoptions if a.writes)
    return summary


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as the lines printed after the combined output."""
    marks: dict[str, int] = summary["marks"]
    lines = [
        f"{summary['items']} items: "
        + ", ".join(f"{marks.get(m, 0)} {_WORDS[m]} ({m})" for m in ("=", "*", "-", "!"))
        + f"; {marks.get('+', 0)} {_WORDS['+']} (+)"
    ]
    if marks.get("~"):
        lines.append(
            f"{marks['~']} explained (~): as this ledger's own apply operations left them (not differences)"
        )
    if summary.get("one_way"):
        lines.append("one-way (--one-way): videos only in the service were not looked for")
    elif summary.get("outside"):
        lines.append(
            f"{summary['outside']} videos in other folders of the checked projects were not looked at"
            " (`+` covers the parents the inventory writes to)"
        )
    if summary["bytes_compared_by"]:
        lines.append(
            "bytes compared by: " + ", ".join(f"{k} {v}" for k, v in summary["bytes_compared_by"].items())
        )
    if summary["no_original"]:
        lines.append(
            f"{summary['no_original']} items: bytes could not be compared, the service keeps no originals"
            " (spec convention 7); durations compared where the inventory gives them"
        )
    if "not_playable" in summary:
        lines.append(
            f"playable (--playable): {summary['not_playable']} migrated video(s) do not play"
            " (done, a play_link, the source's duration within max(1 s, 2 %))"
        )
    if summary["fields_differing"]:
        lines.append("differing: " + ", ".join(f"{k} {v}" for k, v in summary["fields_differing"].items()))
    if summary.get("warnings"):
        lines.append(f"warnings: {len(summary['warnings'])} (a title the service cut is not a difference)")
        lines += [f"  {w}" for w in summary["warnings"][:SHOWN_WARNINGS]]
    if "adopted" in summary:
        lines.append(
            f"adopted: {summary['adopted']}, left to migrate: {summary['left_to_migrate']},"
            f" held: {summary['held']}, fields migrate writes: {summary['migrate_writes']}"
        )
    lines.append("every item matches" if summary["match"] else "differences found")
    return lines


def frame(lines: Sequence[CheckLine]) -> pl.DataFrame:
    """The check lines as a table."""
    return pl.DataFrame([line.report_row() for line in lines], schema=CHECK_SCHEMA, orient="row")


def write_combined(path: Path, lines: Sequence[CheckLine]) -> Path:
    """rclone's --combined file: one `<mark> <name>` line per item and per extra video (0600: titles)."""
    private_dir(path.parent)
    write_private(path, "".join(line.text() + "\n" for line in lines).encode("utf-8"))
    return path


def write_check_report(
    out_dir: Path, lines: Sequence[CheckLine], summary: dict[str, Any], adoptions: Sequence[Adoption]
) -> list[Path]:
    """check.csv, check-summary.csv, check.parquet, check-summary.parquet, check.json and check.html."""
    table = frame(lines)
    document = {"summary": summary, "lines": table.to_dicts(), "adoptions": [a.__dict__ for a in adoptions]}
    return write_report_files(
        out_dir,
        [("check", table), ("check-summary", summary_frame(summary))],
        document=document,
        page=lambda: _html(table, summary),
        name="check",
    )


def _html(table: pl.DataFrame, summary: dict[str, Any]) -> str:
    items = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(summary))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row) + "</tr>"
        for row in table.iter_rows()
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>videoferry check</title>\n'
        "<style>body { font-family: system-ui, sans-serif; margin: 2em; } table { border-collapse: collapse;"
        " font-size: 13px; } th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }</style>"
        f"</head>\n<body><h1>videoferry check</h1>\n<ul>{items}</ul>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>\n</body></html>\n"
    )

"""A copying run's own report (archive, backup: `--report`): one row per item the run saw, as <job>.csv,
.parquet, .json (the counts and the rows) and .html (the counts, the bytes copied, the rows)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import polars as pl

from tasks.report_files import PAGE_STYLE, html_table, write_report_files

__all__ = ["write_run_report"]


def _row(result: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A result as a report row: its schema's fields, a list of text joined (steps by commas, notes by
    semicolons)."""
    values = asdict(result) if is_dataclass(result) and not isinstance(result, type) else dict(result)
    row = {name: values.get(name) for name in schema}
    for name, value in row.items():
        if isinstance(value, list):
            row[name] = ("; " if name == "notes" else ",").join(str(v) for v in value)
    return row


def write_run_report(
    job: str,
    results: Sequence[Any],
    folder: str | Path,
    *,
    schema: Mapping[str, type[pl.DataType]],
    counts: Mapping[str, int],
    noun: str,
    copied: int,
) -> list[Path]:
    """<job>.csv, <job>.parquet, <job>.json ({counts, <noun>: rows}) and <job>.html: one row per item the run
    saw (results: the job's result dataclasses; schema: the report's columns), counts by state in the job's
    order, `copied` the bytes the run copied."""
    frame = pl.DataFrame([_row(r, schema) for r in results], schema=dict(schema))
    said = ", ".join(f"{n} {state}" for state, n in counts.items()) or f"no {noun}"

    def page() -> str:
        title = f"videoferry {job} run"
        return (
            f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
            f"<style>\n{PAGE_STYLE}\n</style></head>\n<body><h1>{title}</h1>\n"
            f"<p>{html.escape(said)}.</p>\n<p>{copied} bytes copied.</p>\n"
            f"{html_table(frame, list(frame.columns), noun=noun)}\n</body></html>\n"
        )

    return write_report_files(
        Path(folder),
        [(job, frame)],
        document={"counts": dict(counts), noun: frame.to_dicts()},
        page=page,
        name=job,
    )

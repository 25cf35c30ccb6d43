"""Writing a report's files for every job: tables as CSV and Parquet, a JSON document, an HTML page."""

from __future__ import annotations

import html
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from videoferry.tasks.private_files import open_private, private_dir, write_private

if TYPE_CHECKING:
    from videoferry.connectors.s3 import S3Config

FORMATS = ("csv", "parquet", "json", "html")
#: The style of every report page.
PAGE_STYLE = """body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
th { background: #f4f4f4; }
.charts { display: flex; gap: 3em; flex-wrap: wrap; }"""


def flat(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV cannot hold nested columns: encode any list/struct column as JSON text."""
    nested = [n for n, t in frame.schema.items() if isinstance(t, pl.List | pl.Struct)]
    if not nested:
        return frame
    return frame.with_columns(
        pl.col(n).map_elements(lambda v: json.dumps(v, default=str), return_dtype=pl.String) for n in nested
    )


def summary_frame(summary: Mapping[str, Any]) -> pl.DataFrame:
    """A summary as a two-column table (metric, value) for CSV / Parquet (nested names joined by dots)."""
    rows: list[tuple[str, str]] = []

    def add(prefix: str, values: Mapping[str, Any]) -> None:
        for name, value in values.items():
            if isinstance(value, dict):
                add(f"{prefix}{name}.", value)
            else:
                rows.append((f"{prefix}{name}", "" if value is None else str(value)))

    add("", summary)
    return pl.DataFrame(rows, schema=["metric", "value"], orient="row")


def html_table(frame: pl.DataFrame, columns: Sequence[str], limit: int = 5000, noun: str = "items") -> str:
    """A table of a report page: the given columns (those present), at most `limit` rows."""
    present = [c for c in columns if c in frame.columns]
    if frame.is_empty() or not present:
        return f"<p>No {noun}.</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in present)
    body = []
    for row in frame.select(present).head(limit).iter_rows():
        cells = "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    more = f"<p>First {limit} of {frame.height} {noun}; the CSV has all.</p>" if frame.height > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def write_report_files(
    out_dir: Path,
    tables: Sequence[tuple[str, pl.DataFrame]],
    *,
    document: Any = None,
    page: Callable[[], str] | None = None,
    name: str = "report",
    formats: Sequence[str] = FORMATS,
) -> list[Path]:
    """Write each table as <stem>.csv / <stem>.parquet, the document as <name>.json, the page as <name>.html.

    Tables are written in their order; a format without its part (no document, no page) writes nothing.
    Returns the files written. Reports hold titles, sources and messages: every file is 0600, the folder is
    created 0700 when missing (tasks/private_files.py).
    """
    private_dir(out_dir)
    written: list[Path] = []
    for fmt in formats:
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r} (use {', '.join(FORMATS)})")
        if fmt in ("csv", "parquet"):
            for stem, frame in tables:
                path = out_dir / f"{stem}.{fmt}"
                with open_private(path) as handle:
                    if fmt == "csv":
                        flat(frame).write_csv(handle)
                    else:
                        frame.write_parquet(handle)
                written.append(path)
        elif fmt == "json" and document is not None:
            path = out_dir / f"{name}.json"
            text = json.dumps(document, indent=2, default=str, ensure_ascii=False)
            write_private(path, text.encode("utf-8"))
            written.append(path)
        elif fmt == "html" and page is not None:
            path = out_dir / f"{name}.html"
            write_private(path, page().encode("utf-8"))
            written.append(path)
    return written


def publish_report(
    where: str, write: Callable[[Path], Sequence[Path]], s3: S3Config | None = None
) -> list[str]:
    """Write a run's report files into `where`, a directory or s3://bucket/prefix/ (written into a temporary
    folder, then each file uploaded under the prefix: an ephemeral worker's disk is gone after its run);
    the files' paths or s3:// URLs."""
    from videoferry.connectors.s3 import parse_s3_uri, shared_s3_client

    if not where.startswith("s3://"):
        return [str(p) for p in write(Path(where).expanduser())]
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    from videoferry.connectors.config import ConfigError

    bucket, prefix = parse_s3_uri(where if where.endswith("/") else where + "/")
    client = shared_s3_client(s3)
    urls: list[str] = []
    with tempfile.TemporaryDirectory(prefix="vf-report-") as folder:
        for path in write(Path(folder)):
            key = f"{prefix}{path.name}"
            try:
                client.upload_file(str(path), bucket, key)
            except (Boto3Error, BotoCoreError, ClientError) as exc:
                cause = exc.__cause__ if isinstance(exc.__cause__, ClientError) else exc
                raise ConfigError(f"--report {where}: the report cannot be written there ({cause})") from None
            urls.append(f"s3://{bucket}/{key}")
    return urls

"""Operations files: CSV, TSV, Parquet, JSON Lines or YAML (local or S3) -> OperationSpecs and RowErrors."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import yaml

from connectors.input_files import InputFileError, detect_format, read_input
from connectors.inventory_load import as_text
from connectors.operations_rows import parse_row
from connectors.s3 import S3Config
from core.fields import unknown_names
from core.item import RowError
from core.operation import ALL_COLUMNS, OperationSpec
from core.operation_graph import check_references, order_operations
from core.redact import safe_uri, scrub_urls

FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".yaml": "yaml",
    ".yml": "yaml",
}
Record = tuple[int, dict[str, str | None]]


class OperationsError(InputFileError):
    """The operations file as a whole cannot be read (missing, unreadable, unknown format, no op column)."""


@dataclass
class Operations:
    """The good rows as OperationSpecs (input order), the refused rows and file-level warnings."""

    uri: str
    format: str
    specs: list[OperationSpec] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused_ids: dict[str, int | None] = field(default_factory=dict)  # explicit ids of refused rows

    @property
    def bad_rows(self) -> list[int]:
        """Row numbers with at least one error, ascending."""
        return sorted({e.row for e in self.errors if e.row is not None})

    def plan(self, known_keys: set[str]) -> tuple[list[OperationSpec], list[RowError]]:
        """The operations to run in dependency order, and every refused row (read and graph errors).

        ``known_keys``: the inventory keys the ledger has a video for (what key: targets may name).
        """
        graph = check_references(self.specs, known_keys, self.refused_ids)
        refused = {e.row for e in graph}
        good = order_operations(s for s in self.specs if s.row not in refused)
        return good, sorted([*self.errors, *graph], key=lambda e: (e.row or 0, e.field, e.reason))


def read_operations(uri: str, *, s3: S3Config | None = None, format: str | None = None) -> Operations:
    """Read and check an operations file: a path, file:// or s3://bucket/key; CSV, TSV, Parquet, JSONL, YAML.

    ``format`` overrides detection by extension. Raises OperationsError when the file cannot be read at
    all; bad rows go to ``.errors`` and never stop the good ones. The reference graph is checked by
    ``Operations.plan`` (it needs the ledger's keys).
    """
    try:
        data, name, base = read_input(uri, s3, what="operations file")
        fmt = detect_format(uri, name, format, FORMATS, what="operations")
    except InputFileError as exc:
        raise OperationsError(str(exc)) from None
    label = safe_uri(uri)
    ops = Operations(uri=label, format=fmt)
    if fmt == "jsonl":
        records = _jsonl_records(label, data, ops.errors)
    elif fmt == "yaml":
        records = _yaml_records(label, data, ops.errors)
    else:
        records = _table_records(label, _table(label, data, fmt), ops.warnings)
    unknown: dict[str, None] = {}
    for row, cells in records:
        unknown.update(dict.fromkeys(c for c in cells if c not in ALL_COLUMNS))
        result = parse_row(row, cells, base)
        if result.spec is not None:
            ops.specs.append(result.spec)
        else:
            ops.errors.extend(result.errors)
            if result.id is not None:
                ops.refused_ids.setdefault(result.id, row)
    if unknown:  # a misspelled column would be ignored on every row: refused before anything runs
        raise OperationsError(
            f"{label}: unknown column{'s' * (len(unknown) > 1)} {unknown_names(unknown, ALL_COLUMNS)}"
            " (connectors/OPERATIONS.md lists the columns)"
        )
    ops.errors.sort(key=lambda e: (e.row or 0, _rank(e.field)))
    ops.warnings = [scrub_urls(w) for w in ops.warnings]
    return ops


# ---------------------------------------------------------------------------------------------- loading


def _table(label: str, data: bytes, fmt: str) -> pl.DataFrame:
    try:
        if not data.strip():
            return pl.DataFrame()
        if fmt == "parquet":
            return pl.read_parquet(io.BytesIO(data))
        separator = "\t" if fmt == "tsv" else ","
        return pl.read_csv(
            io.BytesIO(data), infer_schema=False, separator=separator, truncate_ragged_lines=True
        )
    except pl.exceptions.NoDataError:
        return pl.DataFrame()
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise OperationsError(f"cannot parse {label} as {fmt}: {scrub_urls(first)}") from None


def _table_records(label: str, df: pl.DataFrame, warnings: list[str]) -> list[Record]:
    names = [str(c).strip().lower() for c in df.columns]
    for i, name in enumerate(names):
        dup = re.fullmatch(r"(.+)_duplicated_\d+", name)
        if name in names[:i] or (dup and dup.group(1) in names):
            raise OperationsError(f"{label}: column {(dup.group(1) if dup else name)!r} appears twice")
    if df.height and "op" not in names:
        raise OperationsError(f"{label} has no 'op' column (columns: {', '.join(names)[:200]})")
    df = pl.DataFrame([as_text(s).alias(n) for s, n in zip(df.get_columns(), names, strict=True)])
    records: list[Record] = []
    empty: list[int] = []
    for row, cells in enumerate(df.iter_rows(named=True), start=1):
        if all(v is None or not v.strip() for v in cells.values()):
            empty.append(row)
        else:
            records.append((row, cells))
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (f" and {len(empty) - 10} more" if len(empty) > 10 else "")
        warnings.append(f"skipped {len(empty)} empty row{'s' * (len(empty) > 1)} ({shown})")
    return records


def _cell(value: Any) -> str | None:
    """A JSON or YAML value as the text a CSV cell would hold (lists and objects as JSON)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return json.dumps(value, default=str)


def _record(row: int, obj: Any, errors: list[RowError], shown: str) -> Record | None:
    if not isinstance(obj, dict):
        errors.append(RowError(row, "record", scrub_urls(shown[:200]), "expected an object (a mapping)"))
        return None
    return row, {str(k).strip().lower(): _cell(v) for k, v in obj.items()}


def _jsonl_records(label: str, data: bytes, errors: list[RowError]) -> list[Record]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OperationsError(f"cannot parse {label} as jsonl: not UTF-8 (byte {exc.start})") from None
    records: list[Record] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            shown = scrub_urls(line[:200])
            errors.append(RowError(lineno, "record", shown, f"invalid JSON ({exc.msg} at char {exc.pos})"))
            continue
        record = _record(lineno, obj, errors, line)
        if record:
            records.append(record)
    return records


def _yaml_records(label: str, data: bytes, errors: list[RowError]) -> list[Record]:
    """A YAML list of mappings, or {operations: [...]}; each row's number is the line its item starts on."""
    try:
        loader = yaml.SafeLoader(data.decode("utf-8-sig"))
        try:
            node = loader.get_single_node()
            value = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError as exc:
        raise OperationsError(f"cannot parse {label} as yaml: not UTF-8 (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise OperationsError(f"cannot parse {label} as yaml{where}: {scrub_urls(str(problem))}") from None
    if value is None or node is None:
        return []
    if isinstance(value, dict):
        keys = {str(k).strip().lower(): k for k in value}
        if set(keys) != {"operations"} or not isinstance(value[keys["operations"]], list | type(None)):
            raise OperationsError(
                f"{label}: expected a list of operations, or a mapping with only 'operations'"
            )
        node = next(v for k, v in node.value if str(k.value).strip().lower() == "operations")
        value = value[keys["operations"]]
        if value is None:
            return []
    if not isinstance(value, list) or not isinstance(node, yaml.SequenceNode):
        raise OperationsError(f"{label}: expected a list of operations, or a mapping with only 'operations'")
    records: list[Record] = []
    for item, item_node in zip(value, node.value, strict=True):
        row = item_node.start_mark.line + 1
        record = _record(row, item, errors, json.dumps(item, default=str))
        if record:
            records.append(record)
    return records


def _rank(name: str) -> int:
    return _FIELD_ORDER.get(name, len(_FIELD_ORDER))


_FIELD_ORDER = {name: i for i, name in enumerate(("record", *ALL_COLUMNS))}

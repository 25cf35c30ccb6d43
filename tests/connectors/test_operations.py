"""Operations files: every kind valid and invalid, every format (local and S3), targets, selectors, plan."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from videoferry.connectors.ids import to_base58
from videoferry.connectors.operations import Operations, OperationsError, read_operations
from videoferry.connectors.operations_rows import parse_selector, parse_target
from videoferry.connectors.s3 import S3Config, make_s3_client
from videoferry.core.fields import FieldError
from videoferry.core.item import Chapter, PrivacyType, RowError, VideoStatus
from videoferry.core.operation import (
    AttachParams,
    ChaptersParams,
    ConcatParams,
    CopyParams,
    Crop,
    CutParams,
    DeleteParams,
    MoveParams,
    OpKind,
    ReplaceParams,
    Target,
    TargetKind,
    TrimRange,
    UpdateParams,
)

VIDEO = "0f8fad5b-d9cb-469f-a165-70867728950e"
PROJECT = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
FOLDER = "16fd2706-8baf-433b-82eb-8c7fada847da"

#: One valid row of each kind, as a hand-written file would hold them (JSON cells as text).
ROWS: list[dict[str, str]] = [
    {"op": "update", "id": "u1", "target": VIDEO, "title": "New", "tags": "a; b", "privacy_type": "nowhere"},
    {"op": "chapters", "id": "ch1", "target": "key:intro", "chapters": '[{"time": "1:30", "title": "B"}]'},
    {"op": "copy", "id": "cp1", "target": VIDEO, "parent_id": PROJECT.replace("-", "")},
    {"op": "move", "id": "mv1", "target": "op:cp1", "project_id": PROJECT, "folder_id": FOLDER},
    {
        "op": "cut",
        "id": "cut1",
        "target": "op:ch1",
        "trim": '[{"start": 5, "length": "1:00"}]',
        "crop": '{"w": 640, "h": 360, "quality": "720P"}',
        "title": "Trimmed",
    },
    {
        "op": "concat",
        "id": "cat1",
        "target": "op:cut1",
        "prepend": f'["{to_base58(VIDEO)}"]',
        "append": "key:outro; op:cp1",
        "replace": "TRUE",
    },
    {
        "op": "replace",
        "id": "rep1",
        "target": VIDEO,
        "source": "https://cdn.example.com/new.mp4?X-Amz-Signature=SECRET",
        "trim": '{"start": 2}',
    },
    {
        "op": "attach",
        "id": "att1",
        "target": "key:intro",
        "attachments": '["s3://media/slides.pdf", "s3://media/notes.txt", "s3://media/slides.pdf"]',
        "additional_materials_enabled": "yes",
    },
    {"op": "delete", "id": "del1", "target": f"select:project={PROJECT};tag=old;status=error,aborted"},
]


def write_csv(path: Path, rows: list[dict[str, str]], delimiter: str = ",") -> Path:
    columns = list(dict.fromkeys(c for row in rows for c in row))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, columns, delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_rows(tmp_path: Path, *rows: dict[str, str]) -> Operations:
    return read_operations(str(write_csv(tmp_path / "ops.csv", list(rows))))


def error_of(tmp_path: Path, row: dict[str, str]) -> RowError:
    ops = read_rows(tmp_path, row)
    assert ops.specs == [] and ops.errors, ops.errors
    return ops.errors[0]


def check_reference(ops: Operations) -> None:
    assert ops.errors == [] and ops.warnings == []
    by_id = {s.id: s for s in ops.specs}
    assert list(by_id) == ["u1", "ch1", "cp1", "mv1", "cut1", "cat1", "rep1", "att1", "del1"]
    assert by_id["u1"].params == UpdateParams(title="New", tags=("a", "b"), privacy_type=PrivacyType.NOWHERE)
    assert by_id["ch1"].params == ChaptersParams((Chapter(90.0, "B"),))
    assert by_id["ch1"].target == Target(TargetKind.KEY, "intro")
    assert by_id["cp1"].params == CopyParams(PROJECT)
    assert by_id["mv1"].params == MoveParams(PROJECT, FOLDER)
    assert by_id["cut1"].params == CutParams(
        trim=(TrimRange(5.0, 60.0),), crop=Crop(640.0, 360.0, 0.0, 0.0, "720p"), title="Trimmed"
    )
    assert by_id["cat1"].params == ConcatParams(
        prepend=(Target(TargetKind.VIDEO, VIDEO),),
        append=(Target(TargetKind.KEY, "outro"), Target(TargetKind.OP, "cp1")),
        replace=True,
    )
    assert by_id["cat1"].refs == (
        Target(TargetKind.OP, "cut1"),
        Target(TargetKind.KEY, "outro"),
        Target(TargetKind.OP, "cp1"),
    )
    replace = by_id["rep1"].params
    assert isinstance(replace, ReplaceParams) and replace.trim == TrimRange(2.0, None)
    assert replace.source == "https://cdn.example.com/new.mp4?X-Amz-Signature=SECRET"  # kept for the upload
    attach = by_id["att1"].params  # a duplicate dropped, order kept
    assert attach == AttachParams(("s3://media/slides.pdf", "s3://media/notes.txt"), enable=True)
    delete = by_id["del1"]
    assert delete.params == DeleteParams() and delete.target.kind is TargetKind.SELECT
    assert delete.target.selector is not None
    assert delete.target.selector.statuses == (VideoStatus.ERROR, VideoStatus.ABORTED)
    assert [s.kind for s in ops.specs] == list(OpKind)


def yaml_text(rows: list[dict[str, Any]], wrapped: bool = True) -> str:
    """The rows as a hand-written YAML list (JSON cells as real YAML structures), or {operations: [...]}."""
    lines = ["# nightly edits", *(["operations:"] if wrapped else [])]
    indent = "  " if wrapped else ""
    for row in rows:
        first = True
        for name, value in row.items():
            if isinstance(value, str) and value[:1] in "[{":
                value = json.loads(value)
            lines.append(indent + ("- " if first else "  ") + f"{name}: {json.dumps(value)}")
            first = False
    return "\n".join(lines) + "\n"


def write_format(tmp_path: Path, fmt: str) -> Path:
    path = tmp_path / f"ops.{fmt}"
    if fmt == "csv":
        write_csv(path, ROWS)
    elif fmt == "tsv":
        write_csv(path, ROWS, "\t")
    elif fmt == "parquet":
        columns = list(dict.fromkeys(c for row in ROWS for c in row))
        pl.DataFrame([{c: row.get(c) for c in columns} for row in ROWS]).write_parquet(path)
    elif fmt == "jsonl":
        records = [{k: json.loads(v) if v[:1] in "[{" else v for k, v in row.items()} for row in ROWS]
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    else:
        path.write_text(yaml_text(ROWS))
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl", "yaml"])
def test_each_format_reads_every_kind(tmp_path: Path, fmt: str) -> None:
    ops = read_operations(str(write_format(tmp_path, fmt)))
    assert ops.format == fmt
    check_reference(ops)


def test_formats_give_the_same_derived_ids(tmp_path: Path) -> None:
    rows = [{k: v for k, v in row.items() if k != "id"} for row in ROWS]
    write_csv(tmp_path / "a.csv", rows)
    (tmp_path / "b.yml").write_text(yaml_text(rows, wrapped=False))
    from_csv = read_operations(str(tmp_path / "a.csv"))
    from_yaml = read_operations(str(tmp_path / "b.yml"))
    assert from_csv.errors == from_yaml.errors == []
    assert [s.id for s in from_csv.specs] == [s.id for s in from_yaml.specs]
    assert all(s.id_derived and len(s.id) == 32 for s in from_csv.specs)
    again = read_operations(str(tmp_path / "a.csv"))
    assert [s.id for s in again.specs] == [s.id for s in from_csv.specs]


def test_yaml_rows_are_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "ops.yaml"
    path.write_text(
        f"- op: delete\n  target: {VIDEO}\n\n- op: copy\n  target: nope\n- just a string\n- op: chapters\n"
        f"  target: '{VIDEO}'\n  chapters:\n"
        "    - {time: 1:30, title: Ninety}\n    - {time: '0:05', title: Five}\n"
    )
    ops = read_operations(str(path))
    assert [(e.row, e.field) for e in ops.errors] == [(4, "target"), (6, "record")]
    assert [s.row for s in ops.specs] == [1, 7]
    assert ops.specs[1].params == ChaptersParams((Chapter(90.0, "Ninety"), Chapter(5.0, "Five")))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("op: delete\n", "a list of operations"),
        ("operations: 3\n", "a list of operations"),
        ("- op: delete\n  target: [unclosed\n", "as yaml at line 3"),
    ],
)
def test_yaml_whole_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    with pytest.raises(OperationsError, match=message):
        read_operations(str(path))


def test_empty_files_are_zero_rows(tmp_path: Path) -> None:
    for name, text in [("a.yaml", ""), ("b.yaml", "operations:\n"), ("c.csv", ""), ("d.jsonl", "\n")]:
        (tmp_path / name).write_text(text)
        ops = read_operations(str(tmp_path / name))
        assert ops.specs == [] and ops.errors == [], name


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl", "yaml"])
def test_each_format_from_s3(tmp_path: Path, fmt: str, s3_server: str, s3_bucket: str) -> None:
    local = write_format(tmp_path, fmt)
    client = make_s3_client(S3Config(endpoint_url=s3_server))
    client.put_object(Bucket=s3_bucket, Key=f"jobs/nightly.{fmt}", Body=local.read_bytes())
    ops = read_operations(f"s3://{s3_bucket}/jobs/nightly.{fmt}", s3=S3Config(s3_server))
    check_reference(ops)
    assert ops.uri == f"s3://{s3_bucket}/jobs/nightly.{fmt}"


def test_relative_replace_sources_resolve_beside_the_file(
    tmp_path: Path, s3_server: str, s3_bucket: str
) -> None:
    row = {"op": "replace", "target": VIDEO, "source": "clips/../new.mp4"}
    ops = read_rows(tmp_path, row)
    (spec,) = ops.specs
    assert isinstance(spec.params, ReplaceParams) and spec.params.source == str(tmp_path / "new.mp4")
    client = make_s3_client(S3Config(endpoint_url=s3_server))
    client.put_object(Bucket=s3_bucket, Key="jobs/ops.csv", Body=(tmp_path / "ops.csv").read_bytes())
    from_s3 = read_operations(f"s3://{s3_bucket}/jobs/ops.csv", s3=S3Config(s3_server))
    assert isinstance(from_s3.specs[0].params, ReplaceParams)
    assert from_s3.specs[0].params.source == f"s3://{s3_bucket}/jobs/new.mp4"


def test_whole_file_errors_name_the_file(tmp_path: Path, s3_server: str, s3_bucket: str) -> None:
    with pytest.raises(OperationsError, match="not found"):
        read_operations(str(tmp_path / "none.csv"))
    with pytest.raises(OperationsError, match="is a directory"):
        read_operations(str(tmp_path))
    (tmp_path / "ops.txt").write_text("op,target\n")
    with pytest.raises(OperationsError, match="extension '.txt'"):
        read_operations(str(tmp_path / "ops.txt"))
    assert read_operations(str(tmp_path / "ops.txt"), format="csv").specs == []
    with pytest.raises(OperationsError, match="unknown operations format 'xml'"):
        read_operations(str(tmp_path / "ops.txt"), format="xml")
    (tmp_path / "noop.csv").write_text(f"target\n{VIDEO}\n")
    with pytest.raises(OperationsError, match="no 'op' column"):
        read_operations(str(tmp_path / "noop.csv"))
    (tmp_path / "twice.csv").write_text(f"op,target,op\ndelete,{VIDEO},copy\n")
    with pytest.raises(OperationsError, match="'op' appears twice"):
        read_operations(str(tmp_path / "twice.csv"))
    with pytest.raises(OperationsError, match="local path or an s3:// uri"):
        read_operations("https://example.com/ops.csv?token=SECRET")
    cfg = S3Config(endpoint_url=s3_server)
    with pytest.raises(OperationsError, match=f"s3://{s3_bucket}/none.yaml"):
        read_operations(f"s3://{s3_bucket}/none.yaml", s3=cfg)
    with pytest.raises(OperationsError, match="no such bucket"):
        read_operations("s3://vf-no-such-bucket/ops.csv", s3=cfg)
    with pytest.raises(OperationsError, match="must name one object"):
        read_operations(f"s3://{s3_bucket}/jobs/", s3=cfg)


def test_empty_rows_are_warnings_and_an_unknown_column_refuses_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ops.csv"
    path.write_text(f"op,target\ndelete,{VIDEO}\n,\ncopy,{VIDEO}\n")
    ops = read_operations(str(path))
    assert [s.row for s in ops.specs] == [1, 3]
    assert ops.warnings == ["skipped 1 empty row (2)"]
    # A column the run would ignore on every row (here a misspelled title) refuses the whole file, naming
    # the column and the known one it most probably means; an unrelated one is named alone.
    path.write_text(f"op,target,titel,colour\nupdate,{VIDEO},New,red\n")
    with pytest.raises(OperationsError) as refused:
        read_operations(str(path))
    assert str(refused.value) == (
        f"{path}: unknown columns 'titel' (did you mean 'title'?), 'colour'"
        " (videoferry/connectors/OPERATIONS.md lists"
        " the columns)"
    )


def test_jsonl_bad_lines_are_row_errors(tmp_path: Path) -> None:
    path = tmp_path / "ops.jsonl"
    path.write_text(f'{{"op": "delete", "target": "{VIDEO}"}}\n{{"op": \n[1]\n')
    ops = read_operations(str(path))
    assert [s.row for s in ops.specs] == [1]
    assert [(e.row, e.field) for e in ops.errors] == [(2, "record"), (3, "record")]
    assert "invalid JSON" in ops.errors[0].reason and "expected an object" in ops.errors[1].reason


# ---------------------------------------------------------------------------------------------- targets


def test_targets_in_every_notation() -> None:
    for text in (VIDEO, VIDEO.replace("-", "").upper(), to_base58(VIDEO), f"  {VIDEO} "):
        assert parse_target(text) == Target(TargetKind.VIDEO, VIDEO)
    assert parse_target("key:a b:c") == Target(TargetKind.KEY, "a b:c")
    assert parse_target("OP: step-1") == Target(TargetKind.OP, "step-1")
    for text, message in [
        ("nope", "not an identifier"),
        ("key:", "needs a value"),
        ("op:has space", "not an operation id"),
        ("select:", "needs a value"),
    ]:
        with pytest.raises(FieldError, match=message):
            parse_target(text)


def test_selectors_parse_into_typed_queries() -> None:
    selector = parse_selector(
        f' project={PROJECT.replace("-", "")} ; folder={to_base58(FOLDER)};title="Intro; part*";'
        "tag=x;tag=y;tag=x;status=Done,error;created_after=2026-01-01;created_before=2026-03-01T12:00:00+02:00"
    )
    assert selector.project_id == PROJECT and selector.folder_id == FOLDER
    assert selector.title == "Intro; part*" and selector.title_is_glob
    assert selector.tags == ("x", "y")
    assert selector.statuses == (VideoStatus.DONE, VideoStatus.ERROR)
    assert selector.created_after == datetime(2026, 1, 1, tzinfo=UTC)
    assert selector.created_before == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert parse_selector(selector.text()) == selector
    target = parse_target("select:" + selector.text())
    assert (
        target.kind is TargetKind.SELECT and target.selector == selector and str(target).startswith("select:")
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("colour=red", "unknown clause 'colour'"),
        ("project=123", "project: not an identifier"),
        ("title=a;title=b", "title is given twice"),
        ("status=finished", "unknown status 'finished'"),
        ("created_after=soon", "not a date or time"),
        ("created_after=2026-02-01;created_before=2026-01-01", "nothing can match"),
        ("tag=", "tag has no value"),
        ("title", "cannot read the clause"),
        ('title="open', "not closed"),
    ],
)
def test_bad_selectors(query: str, message: str) -> None:
    with pytest.raises(FieldError, match=message):
        parse_selector(query)


# ---------------------------------------------------------------------------------------------- bad rows


@pytest.mark.parametrize(
    ("row", "field", "value", "reason"),
    [
        ({"op": " ", "target": VIDEO}, "op", "", "missing (expected update"),
        ({"op": "rename", "target": VIDEO}, "op", "rename", "unknown op 'rename'"),
        ({"op": "delete"}, "target", "", "missing: a video id"),
        ({"op": "delete", "target": "abc"}, "target", "abc", "not an identifier (3 characters)"),
        ({"op": "delete", "target": VIDEO, "id": "has space"}, "id", "has space", "not an operation id"),
        ({"op": "delete", "target": VIDEO, "title": "x"}, "title", "x", "not a parameter of delete"),
        ({"op": "copy", "target": VIDEO, "trim": "[]"}, "trim", "[]", "it takes parent_id"),
        ({"op": "update", "target": VIDEO}, "op", "update", "an update needs title"),
        ({"op": "update", "target": VIDEO, "tags": "[1, {}]"}, "tags", "[1, {}]", "item 2 is not a string"),
        ({"op": "update", "target": VIDEO, "privacy_type": "public"}, "privacy_type", "public", "unknown"),
        ({"op": "update", "target": VIDEO, "privacy_type": "custom"}, "privacy_domains", "", "required when"),
        (
            {"op": "update", "target": VIDEO, "privacy_type": "custom", "privacy_domains": "[]"},
            "privacy_domains",
            "[]",
            "required when",
        ),
        (
            {"op": "update", "target": VIDEO, "privacy_type": "anywhere", "privacy_domains": "a.com"},
            "privacy_domains",
            "a.com",
            "only allowed with privacy_type custom",
        ),
        (
            {"op": "update", "target": VIDEO, "privacy_domains": "http://x/"},
            "privacy_domains",
            "http://x/",
            "host",
        ),
        ({"op": "chapters", "target": VIDEO}, "chapters", "", "required: a JSON list"),
        (
            {"op": "chapters", "target": VIDEO, "chapters": '[{"time": "1:75", "title": "x"}]'},
            "chapters",
            '[{"time": "1:75", "title": "x"}]',
            "60 or more",
        ),
        ({"op": "chapters", "target": VIDEO, "chapters": "[{"}, "chapters", "[{", "invalid JSON"),
        ({"op": "copy", "target": VIDEO, "parent_id": "x"}, "parent_id", "x", "not an identifier"),
        ({"op": "move", "target": VIDEO}, "project_id", "", "required: the project"),
        (
            {"op": "move", "target": VIDEO, "project_id": PROJECT, "folder_id": "f"},
            "folder_id",
            "f",
            "identifier",
        ),
        ({"op": "cut", "target": VIDEO}, "trim", "", "a cut needs trim, crop or both"),
        ({"op": "cut", "target": VIDEO, "trim": "[]"}, "trim", "[]", "empty trim"),
        ({"op": "cut", "target": VIDEO, "trim": '[{"start": 1}]'}, "trim", '[{"start": 1}]', "has no length"),
        (
            {"op": "cut", "target": VIDEO, "trim": '[{"start": -1, "length": 2}]'},
            "trim",
            '[{"start": -1, "length": 2}]',
            "range 1 start: value -1 must be a non-negative",
        ),
        (
            {"op": "cut", "target": VIDEO, "trim": '[{"start": 1, "length": 0}]'},
            "trim",
            '[{"start": 1, "length": 0}]',
            "length must be more than 0",
        ),
        (
            {
                "op": "cut",
                "target": VIDEO,
                "trim": '[{"start": 10, "length": 5}, {"start": 0, "length": 11}]',
            },
            "trim",
            '[{"start": 10, "length": 5}, {"start": 0, "length": 11}]',
            "ranges 1 and 2 overlap",
        ),
        (
            {"op": "cut", "target": VIDEO, "trim": '[{"start": 0, "end": 3}]'},
            "trim",
            '[{"start": 0, "end": 3}]',
            "unknown field 'end'",
        ),
        (
            {"op": "cut", "target": VIDEO, "crop": '{"w": 0, "h": 9}'},
            "crop",
            '{"w": 0, "h": 9}',
            "w must be more",
        ),
        ({"op": "cut", "target": VIDEO, "crop": '{"h": 9}'}, "crop", '{"h": 9}', "crop has no w"),
        (
            {"op": "cut", "target": VIDEO, "crop": '{"w": 1, "h": 1, "x": -2}'},
            "crop",
            '{"w": 1, "h": 1, "x": -2}',
            "x must be 0 or more",
        ),
        (
            {"op": "cut", "target": VIDEO, "crop": '{"w": "wide", "h": 1}'},
            "crop",
            '{"w": "wide", "h": 1}',
            "must be a number",
        ),
        (
            {"op": "cut", "target": VIDEO, "crop": '{"w": 1, "h": 1, "quality": "hd"}'},
            "crop",
            '{"w": 1, "h": 1, "quality": "hd"}',
            "not a quality like 360p",
        ),
        ({"op": "cut", "target": VIDEO, "crop": "[1]"}, "crop", "[1]", "expected an object"),
        ({"op": "concat", "target": VIDEO}, "prepend", "", "a concat needs videos"),
        ({"op": "concat", "target": VIDEO, "append": "[]"}, "prepend", "", "a concat needs videos"),
        (
            {"op": "concat", "target": VIDEO, "append": "op:a; zzz"},
            "append",
            "op:a; zzz",
            "item 2: not an id",
        ),
        (
            {"op": "concat", "target": VIDEO, "prepend": "select:tag=x"},
            "prepend",
            "select:tag=x",
            "a selector has no order",
        ),
        (
            {"op": "concat", "target": VIDEO, "append": VIDEO, "replace": "maybe"},
            "replace",
            "maybe",
            "is not true or false",
        ),
        ({"op": "replace", "target": VIDEO}, "source", "", "required: a local path"),
        (
            {"op": "replace", "target": VIDEO, "source": "ftp://h/a.mp4"},
            "source",
            "ftp://h/a.mp4",
            "unknown scheme",
        ),
        (
            {"op": "replace", "target": VIDEO, "source": "/a.mp4", "trim": '[{"start": 1}, {"start": 2}]'},
            "trim",
            '[{"start": 1}, {"start": 2}]',
            "takes one {start, length}",
        ),
        (
            {"op": "replace", "target": "select:tag=x", "source": "/a.mp4"},
            "target",
            "select:tag=x",
            "a replace needs one video, not a selector",
        ),
    ],
)
def test_bad_rows_name_row_field_value_and_reason(
    tmp_path: Path, row: dict[str, str], field: str, value: str, reason: str
) -> None:
    error = error_of(tmp_path, row)
    assert (error.row, error.field, error.value) == (1, field, value), error
    assert reason in error.reason, error.reason
    assert str(error).startswith(f"row 1, field {field}: ")


def test_every_problem_of_a_row_is_reported_and_good_rows_still_come_through(tmp_path: Path) -> None:
    ops = read_rows(
        tmp_path,
        {"op": "delete", "target": VIDEO},
        {"op": "move", "target": "bad", "project_id": "bad", "folder_id": "bad", "id": "mv-x"},
        {"op": "copy", "target": VIDEO},
    )
    assert [s.row for s in ops.specs] == [1, 3]
    assert [e.field for e in ops.errors] == ["target", "project_id", "folder_id"]
    assert ops.bad_rows == [2]
    assert ops.refused_ids == {"mv-x": 2}


def test_signed_urls_never_show_in_errors(tmp_path: Path) -> None:
    secret = "X-Amz-Signature=abc123SECRET"
    ops = read_rows(
        tmp_path,
        {
            "op": "replace",
            "target": "bad",
            "source": f"https://u:pw@cdn.example.com/a.mp4?{secret}",
            "trim": "x",
        },
        {"op": "replace", "target": VIDEO, "source": f"https://cdn.example.com/a b.mp4?{secret}"},
    )
    assert ops.specs == [] and len(ops.errors) == 3
    shown = " ".join(f"{e.value} {e.reason} {e!s}" for e in ops.errors)
    assert "SECRET" not in shown and "pw@" not in shown
    assert ops.errors[-1].value == "https://cdn.example.com/a b.mp4"


def test_update_rules(tmp_path: Path) -> None:
    ops = read_rows(
        tmp_path,
        {
            "op": "Update",
            "target": VIDEO,
            "privacy_domains": "A.com; *.b.org",
            "description": "  kept as is ",
        },
        {"op": "update", "target": VIDEO, "tags": "[]"},
    )
    assert ops.errors == []
    assert ops.specs[0].params == UpdateParams(
        description="  kept as is ", privacy_type=PrivacyType.CUSTOM, privacy_domains=("a.com", "*.b.org")
    )
    assert ops.specs[1].params == UpdateParams(tags=())  # an explicit empty list clears the tags


def test_empty_chapters_clear_and_ids_are_derived_from_content(tmp_path: Path) -> None:
    ops = read_rows(
        tmp_path,
        {"op": "chapters", "target": VIDEO, "chapters": "[]"},
        {"op": "chapters", "target": VIDEO.replace("-", ""), "chapters": "[]"},
    )
    assert ops.specs[0].params == ChaptersParams(())
    assert ops.specs[0].id == ops.specs[1].id  # the same operation written two ways
    good, errors = ops.plan(set())
    assert [s.row for s in good] == [1]
    assert errors == [RowError(2, "id", ops.specs[0].id, errors[0].reason)]
    assert "same operation as row 1" in errors[0].reason


def test_plan_orders_and_refuses_by_the_graph(tmp_path: Path) -> None:
    ops = read_rows(
        tmp_path,
        {"op": "move", "id": "m", "target": "op:c", "project_id": PROJECT},
        {"op": "concat", "id": "c", "target": "key:k1", "prepend": "op:intro", "append": ""},
        {"op": "copy", "id": "intro", "target": VIDEO},
        {"op": "copy", "id": "loop1", "target": "op:loop2"},
        {"op": "copy", "id": "loop2", "target": "op:loop1"},
        {"op": "delete", "target": "key:unknown"},
        {"op": "copy", "target": "op:broken"},
        {"op": "copy", "id": "broken", "target": "nope"},
    )
    good, errors = ops.plan({"k1"})
    assert [s.id for s in good] == ["intro", "c", "m"]
    assert [(e.row, e.field) for e in errors] == [
        (4, "target"),
        (5, "target"),
        (6, "target"),
        (7, "target"),
        (8, "target"),
    ]
    assert errors[0].reason == errors[1].reason == "reference cycle through rows 4, 5"
    assert "key:unknown is no item of the ledger" in errors[2].reason
    assert errors[3].reason == "op:broken is the operation of row 8, refused"


def test_parquet_and_jsonl_accept_native_values(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "op": ["cut", "concat"],
            "target": [VIDEO, VIDEO],
            "trim": [[{"start": 1.0, "length": 2.0}], None],
            "append": [None, [VIDEO]],
            "replace": [None, False],
        }
    )
    frame.write_parquet(tmp_path / "ops.parquet")
    ops = read_operations(str(tmp_path / "ops.parquet"))
    assert ops.errors == []
    assert ops.specs[0].params == CutParams(trim=(TrimRange(1.0, 2.0),))
    assert ops.specs[1].params == ConcatParams(append=(Target(TargetKind.VIDEO, VIDEO),), replace=False)
    buffer = io.StringIO()
    buffer.write(
        json.dumps({"op": "concat", "target": VIDEO, "append": [VIDEO], "replace": True}) + "\n"
    )
    (tmp_path / "ops.ndjson").write_text(buffer.getvalue())
    from_jsonl = read_operations(str(tmp_path / "ops.ndjson"))
    assert from_jsonl.specs[0].params == ConcatParams(append=(Target(TargetKind.VIDEO, VIDEO),), replace=True)
    assert from_jsonl.warnings == []


def test_the_documented_examples_read_the_same_in_csv_and_yaml(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[2] / "videoferry" / "connectors" / "OPERATIONS.md").read_text()
    (tmp_path / "doc.csv").write_text(doc.split("```csv\n", 1)[1].split("```", 1)[0])
    (tmp_path / "doc.yaml").write_text(doc.split("```yaml\n", 1)[1].split("```", 1)[0])
    from_csv = read_operations(str(tmp_path / "doc.csv"))
    from_yaml = read_operations(str(tmp_path / "doc.yaml"))
    assert from_csv.errors == from_yaml.errors == [] and from_csv.warnings == from_yaml.warnings == []
    assert {s.kind for s in from_csv.specs} == set(OpKind)
    assert [(s.id, s.target, s.params) for s in from_csv.specs] == [
        (s.id, s.target, s.params) for s in from_yaml.specs
    ]
    good, errors = from_yaml.plan({"keynote"})
    assert errors == [] and len(good) == 9


def test_attachments_resolve_beside_the_file_and_refuse_urls(tmp_path: Path) -> None:
    (tmp_path / "a b.pdf").write_bytes(b"x")
    (tmp_path / "c;d.txt").write_bytes(b"y")
    row = {"op": "attach", "target": VIDEO, "attachments": "a b.pdf | c;d.txt|s3://bucket/k.pdf"}
    ops = read_rows(tmp_path, row)
    assert ops.errors == []
    params = ops.specs[0].params
    assert isinstance(params, AttachParams) and params.enable is None
    assert params.sources == (str(tmp_path / "a b.pdf"), str(tmp_path / "c;d.txt"), "s3://bucket/k.pdf")
    url = error_of(
        tmp_path, {**row, "attachments": '["a b.pdf", "https://cdn.example.com/x.pdf?sig=SECRET"]'}
    )
    assert (url.row, url.field) == (1, "attachments")
    assert "item 2" in url.reason and "SECRET" not in url.reason + url.value
    missing = error_of(tmp_path, {"op": "attach", "target": VIDEO})
    assert (missing.field, missing.reason.split(":")[0]) == ("attachments", "required")

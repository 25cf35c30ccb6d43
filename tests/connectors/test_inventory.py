"""Inventory readers: every format from disk and from S3 (moto), prefix listings, every bad-row case."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import polars as pl
import pytest

from videoferry.connectors.inventory import OUTPUT_SCHEMA, InventoryError, read_inventory
from videoferry.connectors.s3 import S3Config, make_s3_client
from videoferry.core.item import Chapter, ItemSpec, PrivacyType, RowError, Via, derive_key

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"
OTHER_PARENT = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

HEADER = [
    "source",
    "title",
    "parent_id",
    "description",
    "key",
    "tags",
    "chapters",
    "privacy_type",
    "privacy_domains",
]

# The reference rows: one of each shape, all good.
GOOD_RECORDS: list[dict] = [
    {"source": "videos/intro.mp4"},
    {
        "source": "/data/talk.mov",
        "title": "The talk",
        "parent_id": OTHER_PARENT.upper(),
        "description": "  Keynote\nday 1",
        "key": "talk-1",
        "tags": '["conf", "2026", "conf"]',
        "chapters": '[{"time": 0, "title": "Start"}, {"time": "1:30", "title": "Part 2"}, '
        '{"time": "01:02:03.5", "title": "End"}]',
        "privacy_type": "Custom",
        "privacy_domains": "example.com; *.Example.org",
    },
    {"source": "s3://media-bucket/raw/clip.final.mp4", "tags": "a; b ;;c", "privacy_type": "nowhere"},
    {"source": "https://cdn.example.test/v/My%20Film.mp4?sig=SECRET", "chapters": "[]", "tags": "[]"},
]


def write_csv(path: Path, records: list[dict], header: list[str] = HEADER, sep: str = ",") -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header, delimiter=sep, extrasaction="ignore")
        writer.writeheader()
        for rec in records:
            writer.writerow(rec)
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_parquet(path: Path, records: list[dict]) -> Path:
    pl.DataFrame(
        [{c: r.get(c) for c in HEADER} for r in records], schema=dict.fromkeys(HEADER, pl.String)
    ).write_parquet(path)
    return path


def check_reference(inv, base: str) -> None:
    """The four GOOD_RECORDS, normalised, whatever the format."""
    assert inv.errors == []
    assert inv.rows.schema == OUTPUT_SCHEMA
    rows = inv.rows.to_dicts()
    assert [r["row"] for r in rows] == [1, 2, 3, 4]

    intro, talk, clip, film = rows
    assert intro["source"] == f"{base}/videos/intro.mp4"
    assert intro["source_type"] == ("s3" if base.startswith("s3://") else "file")
    assert (intro["title"], intro["filename"], intro["parent_id"]) == ("intro", "intro.mp4", PARENT)
    assert intro["key"] == derive_key(intro["source"], PARENT)
    assert (intro["tags"], intro["chapters"], intro["privacy_type"], intro["privacy_domains"]) == (None,) * 4

    assert talk["source"] == "/data/talk.mov" and talk["source_type"] == "file"
    assert talk["title"] == "The talk"
    assert talk["parent_id"] == OTHER_PARENT  # upper case normalised
    assert talk["description"] == "  Keynote\nday 1"  # descriptions are kept as written
    assert talk["key"] == "talk-1"
    assert talk["tags"] == ["conf", "2026"]
    assert talk["chapters"] == [
        {"time": 0.0, "title": "Start"},
        {"time": 90.0, "title": "Part 2"},
        {"time": 3723.5, "title": "End"},
    ]
    assert talk["privacy_type"] == "custom"
    assert talk["privacy_domains"] == ["example.com", "*.example.org"]

    assert clip["source"] == "s3://media-bucket/raw/clip.final.mp4" and clip["source_type"] == "s3"
    assert (clip["title"], clip["tags"], clip["privacy_type"]) == ("clip.final", ["a", "b", "c"], "nowhere")

    assert (
        film["source"] == "https://cdn.example.test/v/My%20Film.mp4?sig=SECRET"
    )  # kept whole for the import
    assert (film["source_type"], film["filename"], film["title"]) == ("url", "My Film.mp4", "My Film")
    assert (film["chapters"], film["tags"]) == ([], [])  # explicit empty lists, not "not given"


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "jsonl"])
def test_each_format_from_disk(tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inv_dir = tmp_path / "lists"
    inv_dir.mkdir()
    path = inv_dir / f"inventory.{fmt}"
    if fmt == "csv":
        write_csv(path, GOOD_RECORDS)
    elif fmt == "tsv":
        write_csv(path, GOOD_RECORDS, sep="\t")
    elif fmt == "parquet":
        write_parquet(path, GOOD_RECORDS)
    else:
        write_jsonl(path, GOOD_RECORDS)
    monkeypatch.chdir(tmp_path)  # relative sources resolve against the inventory's directory, not the cwd
    inv = read_inventory(str(path), default_parent_id=PARENT)
    assert inv.format == fmt
    check_reference(inv, str(inv_dir))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_each_format_from_s3(tmp_path: Path, fmt: str, s3_server: str, s3_bucket: str) -> None:
    local = tmp_path / f"inventory.{fmt}"
    {"csv": write_csv, "parquet": write_parquet, "jsonl": write_jsonl}[fmt](local, GOOD_RECORDS)
    client = make_s3_client(S3Config(endpoint_url=s3_server))
    client.put_object(Bucket=s3_bucket, Key=f"lists/2026/inventory.{fmt}", Body=local.read_bytes())
    inv = read_inventory(
        f"s3://{s3_bucket}/lists/2026/inventory.{fmt}", default_parent_id=PARENT, s3=S3Config(s3_server)
    )
    # A relative source in an inventory stored in S3 names an object beside the inventory.
    check_reference(inv, f"s3://{s3_bucket}/lists/2026")


def test_parquet_with_real_list_columns(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "source": ["/v/a.mp4", "/v/b.mp4"],
            "tags": [["x", "y"], None],
            "chapters": [[{"time": 5.0, "title": "Five"}], [{"time": 65.5, "title": "Later"}]],
            "privacy_domains": [None, ["a.example"]],
            "key": [1, 2],
        }
    )
    frame.write_parquet(tmp_path / "inv.parquet")
    inv = read_inventory(str(tmp_path / "inv.parquet"), default_parent_id=PARENT)
    assert inv.errors == []
    rows = inv.rows.to_dicts()
    assert rows[0]["tags"] == ["x", "y"] and rows[1]["tags"] is None
    assert rows[0]["chapters"] == [{"time": 5.0, "title": "Five"}]
    assert rows[1]["chapters"] == [{"time": 65.5, "title": "Later"}]
    assert (rows[1]["privacy_type"], rows[1]["privacy_domains"]) == (
        "custom",
        ["a.example"],
    )  # domains imply custom
    assert [r["key"] for r in rows] == ["1", "2"]


def test_jsonl_with_native_json_values(tmp_path: Path) -> None:
    path = tmp_path / "inv.jsonl"
    path.write_text(
        json.dumps({"source": "a.mp4", "tags": ["t1", "t2"], "chapters": [{"time": "0:10", "title": "Ten"}]})
        + "\n\n"
        + json.dumps({"Source": "b.mp4", "Title": 42, "extra": 1, "other": None})
        + "\n",
        encoding="utf-8",
    )
    inv = read_inventory(str(path), default_parent_id=PARENT)
    rows = inv.rows.to_dicts()
    assert [r["row"] for r in rows] == [1, 3]  # JSONL rows are line numbers; blank lines are skipped
    assert rows[0]["tags"] == ["t1", "t2"] and rows[0]["chapters"] == [{"time": 10.0, "title": "Ten"}]
    assert rows[1]["title"] == "42"
    assert inv.warnings == ["ignored unknown columns: 'extra', 'other'"]


def test_s3_prefix_listing(s3_server: str, s3_bucket: str) -> None:
    client = make_s3_client(S3Config(endpoint_url=s3_server))
    client.put_object(Bucket=s3_bucket, Key="event/", Body=b"")  # a console "folder" marker
    client.put_object(Bucket=s3_bucket, Key="event/day1/keynote.mp4", Body=b"k" * 123)
    client.put_object(Bucket=s3_bucket, Key="event/day2/panel.v2.mov", Body=b"p" * 45)
    client.put_object(Bucket=s3_bucket, Key="elsewhere/skip.mp4", Body=b"s")
    cfg = S3Config(endpoint_url=s3_server)

    inv = read_inventory(f"s3://{s3_bucket}/event/", default_parent_id=PARENT, s3=cfg)
    assert inv.format == "s3-listing"
    assert inv.errors == []
    assert inv.rows.select("row", "source", "size", "title", "parent_id").rows() == [
        (1, f"s3://{s3_bucket}/event/day1/keynote.mp4", 123, "keynote", PARENT),
        (2, f"s3://{s3_bucket}/event/day2/panel.v2.mov", 45, "panel.v2", PARENT),
    ]
    assert inv.warnings == ["skipped 1 folder marker objects (keys ending in /)"]

    whole = read_inventory(f"s3://{s3_bucket}", default_parent_id=PARENT, s3=cfg)
    assert whole.rows.height == 3
    empty = read_inventory(f"s3://{s3_bucket}/nothing-here/", default_parent_id=PARENT, s3=cfg)
    assert (empty.rows.height, empty.errors) == (0, [])
    no_parent = read_inventory(f"s3://{s3_bucket}/event/", default_parent_id=None, s3=cfg)
    assert no_parent.rows.height == 0
    assert [(e.row, e.field) for e in no_parent.errors] == [(1, "parent_id"), (2, "parent_id")]


BAD_CASES: list[tuple[dict, str, str]] = [
    ({"source": "   ", "title": "only a title"}, "source", "missing"),
    ({"source": "ftp://host/a.mp4"}, "source", "unknown scheme 'ftp'"),
    ({"source": "s3://bucket-only"}, "source", "s3://bucket/key"),
    ({"source": "s3://bkt/a/prefix/"}, "source", "s3://bucket/key"),
    ({"source": "https:///nohost.mp4"}, "source", "no host"),
    ({"source": "a.mp4", "tags": '["unterminated'}, "tags", "invalid JSON"),
    ({"source": "a.mp4", "tags": '[["nested"]]'}, "tags", "item 1 is not a string"),
    ({"source": "a.mp4", "chapters": "{not json"}, "chapters", "invalid JSON"),
    ({"source": "a.mp4", "chapters": "0:00 Intro"}, "chapters", "invalid JSON"),
    ({"source": "a.mp4", "chapters": '{"time": 1, "title": "x"}'}, "chapters", "expected a JSON list"),
    ({"source": "a.mp4", "chapters": '[{"time": "1:75", "title": "x"}]'}, "chapters", "60 or more"),
    ({"source": "a.mp4", "chapters": '[{"time": "soon", "title": "x"}]'}, "chapters", "not seconds, mm:ss"),
    ({"source": "a.mp4", "chapters": '[{"time": -3, "title": "x"}]'}, "chapters", "non-negative"),
    ({"source": "a.mp4", "chapters": '[{"title": "x"}]'}, "chapters", "has no time"),
    ({"source": "a.mp4", "chapters": '[{"time": 3}]'}, "chapters", "has no title"),
    ({"source": "a.mp4", "privacy_type": "public"}, "privacy_type", "unknown privacy_type 'public'"),
    (
        {"source": "a.mp4", "privacy_type": "custom"},
        "privacy_domains",
        "required when privacy_type is custom",
    ),
    (
        {"source": "a.mp4", "privacy_type": "anywhere", "privacy_domains": "a.com"},
        "privacy_domains",
        "only allowed",
    ),
    (
        {"source": "a.mp4", "privacy_type": "custom", "privacy_domains": "https://a.com/x"},
        "privacy_domains",
        "host",
    ),
    ({"source": "a.mp4", "privacy_domains": "[bad"}, "privacy_domains", "invalid JSON"),
    ({"source": "a.mp4", "parent_id": "project-42"}, "parent_id", "not an identifier"),
    ({"source": "a.mp4", "parent_id": "0f8fad5b-d9cb-469f-a165-70867728950"}, "parent_id", "identifier"),
]


@pytest.mark.parametrize(
    ("bad", "field", "reason"), BAD_CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(BAD_CASES)]
)
def test_each_bad_row_is_reported_with_its_row_number(
    tmp_path: Path, bad: dict, field: str, reason: str
) -> None:
    records = [{"source": "first.mp4"}, {"source": "second.mp4"}, bad, {"source": "fourth.mp4"}]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(3, field)]
    assert reason in inv.errors[0].reason
    assert str(inv.errors[0]).startswith(f"row 3, field {field}: ")
    assert inv.rows["row"].to_list() == [1, 2, 4]  # the good rows are untouched


def test_missing_parent_without_default(tmp_path: Path) -> None:
    records = [{"source": "a.mp4"}, {"source": "b.mp4", "parent_id": PARENT}]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=None)
    assert [(e.row, e.field) for e in inv.errors] == [(1, "parent_id")]
    assert "no --parent-id" in inv.errors[0].reason
    assert inv.rows["row"].to_list() == [2]


def test_duplicate_keys_keep_the_first(tmp_path: Path) -> None:
    (tmp_path / "media").mkdir()
    records = [
        {"source": "media/a.mp4"},
        {"source": "media/b.mp4", "key": "k1"},
        {"source": str(tmp_path / "media" / "a.mp4")},  # the same file as row 1, written absolutely
        {"source": "media/c.mp4", "key": "k1"},
        {"source": "media/./a.mp4", "parent_id": OTHER_PARENT},  # another destination: not a duplicate
        {"source": "media/d.mp4", "key": "k1"},
    ]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(3, "key"), (4, "key"), (6, "key")]
    assert "duplicate source for the same parent_id (first at row 1)" in inv.errors[0].reason
    assert inv.errors[1].reason == "duplicate key (first used at row 2)"
    assert inv.errors[2].value == "k1"
    assert inv.rows["row"].to_list() == [1, 2, 5]
    assert inv.rows["key"].n_unique() == 3


def test_several_errors_in_one_row_are_all_reported(tmp_path: Path) -> None:
    records = [{"source": "gopher://x", "tags": "[", "privacy_type": "secret", "parent_id": "nope"}]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [e.field for e in inv.errors] == ["source", "parent_id", "tags", "privacy_type"]
    assert {e.row for e in inv.errors} == {1}
    assert inv.bad_rows == [1]
    assert inv.rows.height == 0


def test_jsonl_bad_lines_use_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "inv.jsonl"
    path.write_text(
        '{"source": "a.mp4"}\n\n{"source": "b.mp4", oops}\n["not", "an", "object"]\n'
        '{"source": "c.mp4", "chapters": [{"time": "x", "title": "y"}]}\n{"source": "d.mp4"}\n',
        encoding="utf-8",
    )
    inv = read_inventory(str(path), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(3, "record"), (4, "record"), (5, "chapters")]
    assert str(inv.errors[0]).startswith("row 3, field record: invalid JSON (")
    assert inv.rows["row"].to_list() == [1, 6]


def test_row_error_reads_like_a_sentence() -> None:
    err = RowError(row=7, field="chapters", value="[", reason="invalid JSON (Expecting value at char 1)")
    assert str(err) == "row 7, field chapters: invalid JSON (Expecting value at char 1)"


def test_url_secrets_stay_out_of_errors(tmp_path: Path) -> None:
    records = [{"source": "https://cdn.example.test/a b.mp4?X-Amz-Signature=TOPSECRET", "title": "x"}]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert len(inv.errors) == 1 and inv.errors[0].field == "source"
    assert "TOPSECRET" not in inv.errors[0].value + str(inv.errors[0])
    assert inv.errors[0].value == "https://cdn.example.test/a b.mp4"


def test_url_secrets_stay_out_of_record_and_file_errors(tmp_path: Path) -> None:
    jsonl = tmp_path / "inv.jsonl"
    jsonl.write_text('{"source": "https://h.test/a.mp4?X-Amz-Signature=TOPSECRET", oops}\n', encoding="utf-8")
    inv = read_inventory(str(jsonl), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(1, "record")]
    assert "https://h.test/a.mp4" in inv.errors[0].value
    assert "TOPSECRET" not in inv.errors[0].value + str(inv.errors[0])

    broken = tmp_path / "inv.csv"
    broken.write_text('source,title\n"https://h.test/a.mp4?X-Amz-Signature=TOPSECRET,x\n', encoding="utf-8")
    with pytest.raises(InventoryError) as exc:
        read_inventory(str(broken), default_parent_id=PARENT)
    assert "TOPSECRET" not in str(exc.value)


def test_long_titles_are_kept_and_sources_of_all_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    long_title = "T" * 1000
    records = [
        {"source": "file:///srv/media/x%20y.mp4", "title": long_title},
        {"source": "~/clips/z.mp4"},
        {"source": "../up/./w.mp4"},
        {"source": "HTTPS://Example.test"},
    ]
    (tmp_path / "lists").mkdir()
    inv = read_inventory(str(write_csv(tmp_path / "lists" / "inv.csv", records)), default_parent_id=PARENT)
    assert inv.errors == []
    assert inv.rows.select("source", "source_type", "title").rows() == [
        ("/srv/media/x y.mp4", "file", long_title),
        (str(tmp_path / "home" / "clips" / "z.mp4"), "file", "z"),
        (str(tmp_path / "up" / "w.mp4"), "file", "w"),
        ("HTTPS://Example.test", "url", "Example"),
    ]


def test_headers_are_case_insensitive_and_unknown_columns_warned(tmp_path: Path) -> None:
    path = tmp_path / "inv.csv"
    path.write_text(
        "\ufeffSource , TITLE,Notes,size\n/v/a.mp4,A,hello,12\n,,,\n/v/b.mp4,,,\n", encoding="utf-8"
    )
    inv = read_inventory(str(path), default_parent_id=PARENT)
    assert inv.rows.select("row", "title").rows() == [(1, "A"), (3, "b")]
    assert inv.errors == []
    assert inv.warnings == ["ignored unknown columns: 'notes', 'size'", "skipped 1 empty row (row 2)"]


def test_a_misspelled_column_refuses_the_inventory_naming_the_near_name(tmp_path: Path) -> None:
    # Every row would go without its title (the file name instead): refused before anything runs.
    path = tmp_path / "inv.csv"
    path.write_text("source,titel,notes\n/v/a.mp4,A,hello\n", encoding="utf-8")
    with pytest.raises(InventoryError) as refused:
        read_inventory(str(path), default_parent_id=PARENT)
    assert str(refused.value) == (
        f"{path}: unknown column 'titel' (did you mean 'title'?)"
        " (videoferry/connectors/INVENTORY.md lists the columns)"
    )


@pytest.mark.parametrize("content", ["", "source,title\n", "\n"])
def test_empty_inventories_have_nothing_to_do(tmp_path: Path, content: str) -> None:
    path = tmp_path / "inv.csv"
    path.write_text(content)
    inv = read_inventory(str(path), default_parent_id=PARENT)
    assert (inv.rows.height, inv.errors) == (0, [])
    assert inv.rows.schema == OUTPUT_SCHEMA
    jsonl = tmp_path / "inv.jsonl"
    jsonl.write_text(content.replace("source,title", ""))
    assert read_inventory(str(jsonl), default_parent_id=PARENT).rows.height == 0


def test_unreadable_inventories_raise_naming_the_file(tmp_path: Path, s3_server: str, s3_bucket: str) -> None:
    missing = tmp_path / "missing.csv"
    with pytest.raises(InventoryError, match="not found") as exc:
        read_inventory(str(missing), default_parent_id=PARENT)
    assert str(missing) in str(exc.value)

    with pytest.raises(InventoryError, match="not found"):
        read_inventory(str(tmp_path / "missing.xlsx"), default_parent_id=PARENT)
    with pytest.raises(InventoryError, match="is a directory"):
        read_inventory(str(tmp_path), default_parent_id=PARENT)

    (tmp_path / "inv.xlsx").write_bytes(b"PK")
    with pytest.raises(InventoryError, match=r"\.xlsx"):
        read_inventory(str(tmp_path / "inv.xlsx"), default_parent_id=PARENT)

    (tmp_path / "broken.parquet").write_bytes(b"definitely not parquet")
    with pytest.raises(InventoryError, match="broken.parquet"):
        read_inventory(str(tmp_path / "broken.parquet"), default_parent_id=PARENT)

    (tmp_path / "latin1.jsonl").write_bytes('{"source": "caf\xe9.mp4"}\n'.encode("latin-1"))
    with pytest.raises(InventoryError, match="not UTF-8"):
        read_inventory(str(tmp_path / "latin1.jsonl"), default_parent_id=PARENT)

    (tmp_path / "nosource.csv").write_text("path,title\n/a.mp4,A\n")
    with pytest.raises(InventoryError, match="no 'source' column"):
        read_inventory(str(tmp_path / "nosource.csv"), default_parent_id=PARENT)

    (tmp_path / "twice.csv").write_text("source,Source\n/a.mp4,/b.mp4\n")
    with pytest.raises(InventoryError, match="appears twice"):
        read_inventory(str(tmp_path / "twice.csv"), default_parent_id=PARENT)

    with pytest.raises(InventoryError, match="--parent-id .proj-1. is not an identifier"):
        read_inventory(str(write_csv(tmp_path / "ok.csv", [{"source": "a.mp4"}])), default_parent_id="proj-1")

    cfg = S3Config(endpoint_url=s3_server)
    with pytest.raises(InventoryError, match=f"s3://{s3_bucket}/lists/none.csv"):
        read_inventory(f"s3://{s3_bucket}/lists/none.csv", default_parent_id=PARENT, s3=cfg)
    with pytest.raises(InventoryError, match="no such bucket"):
        read_inventory("s3://vf-no-such-bucket/x.csv", default_parent_id=PARENT, s3=cfg)
    with pytest.raises(InventoryError, match="local path or an s3:// uri"):
        read_inventory("https://example.test/inv.csv?token=SECRET", default_parent_id=PARENT)


def test_format_override(tmp_path: Path) -> None:
    path = tmp_path / "inventory.txt"
    write_jsonl(path, [{"source": "a.mp4"}])
    assert read_inventory(str(path), default_parent_id=PARENT, format="jsonl").rows.height == 1


def test_a_100k_row_csv_is_planned(tmp_path: Path) -> None:
    n = 100_000
    bad_rows = {17: "tags", 50_000: "chapters", 99_999: "privacy_type"}
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["source", "title", "tags", "chapters", "privacy_type"])
    for row in range(1, n + 1):
        tags = "[broken" if bad_rows.get(row) == "tags" else f"t{row % 7};shared"
        chapters = (
            '[{"time": "9:99", "title": "x"}]'
            if bad_rows.get(row) == "chapters"
            else ('[{"time": "0:30", "title": "Half"}]' if row % 2 else "")
        )
        privacy = "everyone" if bad_rows.get(row) == "privacy_type" else ("nowhere" if row % 3 == 0 else "")
        writer.writerow(
            [
                f"media/part{row // 1000}/clip{row:06d}.mp4",
                "" if row % 5 else f"Title {row}",
                tags,
                chapters,
                privacy,
            ]
        )
    path = tmp_path / "big.csv"
    path.write_text(buf.getvalue())

    inv = read_inventory(str(path), default_parent_id=PARENT)

    assert [(e.row, e.field) for e in inv.errors] == sorted(bad_rows.items())
    rows = inv.rows
    assert rows.height == n - len(bad_rows)
    assert rows["key"].n_unique() == rows.height
    assert rows["row"].is_sorted() and rows["row"][0] == 1 and rows["row"][-1] == n
    first = rows.row(0, named=True)
    assert first["source"] == str(tmp_path / "media" / "part0" / "clip000001.mp4")
    assert first["title"] == "clip000001"
    assert first["tags"] == ["t1", "shared"]
    assert first["chapters"] == [{"time": 30.0, "title": "Half"}]
    fifth = rows.filter(pl.col("row") == 5).row(0, named=True)
    assert (fifth["title"], fifth["chapters"]) == ("Title 5", [{"time": 30.0, "title": "Half"}])
    assert rows.filter(pl.col("privacy_type") == "nowhere").height == n // 3 - 1  # row 99_999 is bad
    assert rows["key"][0] == derive_key(first["source"], PARENT)


def test_rows_become_item_specs_routed_by_via(tmp_path: Path) -> None:
    records = [
        {"source": "/m/a.mp4", "title": "A", "tags": "x; y", "privacy_domains": "Example.com"},
        {"source": "https://cdn.test/b.mp4?sig=1", "chapters": '[{"time": "1:30", "title": "Demo"}]'},
        {"source": "s3://bucket/c.mp4"},
    ]
    path = write_csv(tmp_path / "inv.csv", records)
    specs = list(read_inventory(str(path), default_parent_id=PARENT).specs())
    assert [s.via for s in specs] == [Via.TUS, Via.URL, Via.TUS]
    first, second, _ = specs
    assert (first.title, first.tags, first.privacy_domains) == ("A", ("x", "y"), ("example.com",))
    assert first.privacy_type is PrivacyType.CUSTOM and first.key == derive_key("/m/a.mp4", PARENT)
    assert second.title == "b" and second.chapters == (Chapter(90.0, "Demo"),)
    # --via url: the local file cannot travel that way and is a bad row; the others are routed.
    routed = read_inventory(str(path), default_parent_id=PARENT, via="url")
    assert [s.via for s in routed.specs()] == [Via.URL, Via.URL]
    assert [(e.row, e.field) for e in routed.errors] == [(1, "source")]
    assert "cannot be imported by URL" in routed.errors[0].reason


def test_item_specs_are_the_dataclass_made_with_the_same_values(tmp_path: Path) -> None:
    records = [
        {"source": "/m/a.mp4", "title": "A", "tags": "x; y", "privacy_domains": "Example.com", "key": "k"},
        {"source": "https://cdn.test/b.mp4?sig=1", "chapters": '[{"time": "1:30", "title": "Demo"}]'},
        {"source": "s3://bucket/c.mp4", "description": "About", "privacy_type": "nowhere"},
    ]
    path = write_csv(tmp_path / "inv.csv", records)
    specs = list(read_inventory(str(path), default_parent_id=PARENT).specs())
    made = [ItemSpec(**{f.name: getattr(s, f.name) for f in dataclasses.fields(ItemSpec)}) for s in specs]
    assert specs == made and [hash(s) for s in specs] == [hash(s) for s in made]
    assert [repr(s) for s in specs] == [repr(s) for s in made] and "cdn.test" not in repr(specs[1])
    assert [vars(s) for s in specs] == [vars(s) for s in made]
    assert specs[0].key == "k" and specs[1].source_kind.value == "url" and specs[2].row == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        specs[0].title = "changed"  # type: ignore[misc]
    assert dataclasses.replace(specs[2], title="T") == dataclasses.replace(made[2], title="T")


def test_parent_map_puts_one_parents_rows_under_another_and_names_a_bad_pair(tmp_path: Path) -> None:
    old, new, top = (f"6f1c2a9e-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
    path = tmp_path / "inv.csv"
    path.write_text(f"source,parent_id\nhttps://h/a.mp4,{old.replace('-', '').upper()}\nhttps://h/b.mp4,\n")
    read = read_inventory(str(path), default_parent_id=top, parent_map=[f"{old}={new}"])
    assert read.errors == [] and [s.parent_id for s in read.specs()] == [new, top]
    for bad in ("nonsense", f"{old}=x", f"{old}={new},{old}={top}"):
        with pytest.raises(InventoryError, match="--parent-map"):
            read_inventory(str(path), default_parent_id=top, parent_map=[bad])

"""Inventory identity: derived keys (signed URLs keep theirs) and parent_id in every notation of the spec."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.connectors.test_inventory import write_csv, write_jsonl
from videoferry.connectors.ids import to_base58
from videoferry.connectors.inventory import InventoryError, read_inventory

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"
OTHER_PARENT = "7c9e6679-7425-40de-944b-e07fc1f90ae7"

URLS = [
    "https://bucket.s3.example.test/media/a.mp4?X-Amz-Signature={sig}&X-Amz-Expires=3600",
    "https://cdn.example.test/v/b.mp4?token={sig}#t=10",
    "HTTP://cdn.example.test/v/c.mp4?token={sig}",
    "https://cdn.example.test/v/d.mp4",
]


def _keys(path: Path, urls: list[str], sig: str) -> list[str]:
    inv = read_inventory(
        str(write_csv(path, [{"source": u.format(sig=sig)} for u in urls])), default_parent_id=PARENT
    )
    assert inv.errors == []
    return inv.rows["key"].to_list()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def test_signed_urls_signed_again_keep_their_keys(tmp_path: Path) -> None:
    first = _keys(tmp_path / "monday.csv", URLS, "AAAA1111")
    second = _keys(tmp_path / "tuesday.csv", URLS, "BBBB2222")
    assert first == second
    assert len(set(first)) == len(URLS)
    # The key is the URL without query and fragment (and the parent), so a URL without any keeps its old key.
    assert first[0] == _sha(f"https://bucket.s3.example.test/media/a.mp4\n{PARENT}")
    assert first[3] == _sha(f"https://cdn.example.test/v/d.mp4\n{PARENT}")


def test_a_changed_url_path_or_parent_changes_the_key(tmp_path: Path) -> None:
    base = _keys(tmp_path / "a.csv", URLS[:1], "S1")
    moved = _keys(tmp_path / "b.csv", [URLS[0].replace("/media/a.mp4", "/media/a2.mp4")], "S1")
    assert base != moved
    other = read_inventory(
        str(write_csv(tmp_path / "c.csv", [{"source": URLS[0].format(sig="S1"), "parent_id": OTHER_PARENT}])),
        default_parent_id=PARENT,
    )
    assert other.rows["key"].to_list() != base


def test_the_row_keeps_the_signed_url_it_was_given(tmp_path: Path) -> None:
    url = URLS[0].format(sig="SECRET")
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", [{"source": url}])), default_parent_id=PARENT)
    assert inv.rows["source"].to_list() == [url]  # the service needs the signature to fetch the file


def test_file_and_s3_keys_are_unchanged(tmp_path: Path) -> None:
    records = [
        {"source": "/data/clip.mp4?not-a-query"},
        {"source": "s3://media/raw/clip.mp4?versionless#x"},
        {"source": "/data/plain.mp4"},
    ]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert inv.errors == []
    # Paths and S3 keys may hold '?' and '#': they are part of the name, and of the key.
    assert inv.rows["key"].to_list() == [
        _sha(f"/data/clip.mp4?not-a-query\n{PARENT}"),
        _sha(f"s3://media/raw/clip.mp4?versionless#x\n{PARENT}"),
        _sha(f"/data/plain.mp4\n{PARENT}"),
    ]


def test_urls_differing_only_in_the_query_need_their_own_keys(tmp_path: Path) -> None:
    records = [
        {"source": "https://files.example.test/get?id=1"},
        {"source": "https://files.example.test/get?id=2"},
        {"source": "https://files.example.test/get?id=3", "key": "third"},
    ]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(2, "key")]
    assert "query string is not part of its derived key" in inv.errors[0].reason
    assert "id=2" not in str(inv.errors[0])  # queries never reach messages
    assert inv.rows["row"].to_list() == [1, 3]


# ---------------------------------------------------------------------------------------------- parent_id

#: A UUID whose base58 form has 21 digits (the 22-character form pads it with a leading 0).
SHORT_B58 = "05f8fad5-d9cb-469f-a165-70867728950e"


def test_parent_id_in_every_notation_is_stored_in_one_form(tmp_path: Path) -> None:
    b58 = to_base58(OTHER_PARENT)
    short = to_base58(SHORT_B58)
    assert len(b58) == 22 and short.startswith("0") and len(short.lstrip("0")) == 21
    records = [
        {"source": "a.mp4", "parent_id": OTHER_PARENT},
        {"source": "b.mp4", "parent_id": OTHER_PARENT.upper()},
        {"source": "c.mp4", "parent_id": OTHER_PARENT.replace("-", "")},
        {"source": "d.mp4", "parent_id": f"  {b58} "},
        {"source": "e.mp4", "parent_id": short},
        {"source": "f.mp4", "parent_id": short.lstrip("0")},
        {"source": "g.mp4"},
    ]
    inv = read_inventory(str(write_jsonl(tmp_path / "inv.jsonl", records)), default_parent_id=PARENT)
    assert inv.errors == []
    assert inv.rows["parent_id"].to_list() == [OTHER_PARENT] * 4 + [SHORT_B58] * 2 + [PARENT]


def test_the_same_source_under_one_parent_in_two_notations_is_one_item(tmp_path: Path) -> None:
    records = [
        {"source": "a.mp4", "parent_id": OTHER_PARENT},
        {"source": "a.mp4", "parent_id": to_base58(OTHER_PARENT)},
    ]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [(e.row, e.field) for e in inv.errors] == [(2, "key")]
    assert "duplicate source for the same parent_id (first at row 1)" in inv.errors[0].reason


@pytest.mark.parametrize(
    "parent",
    [to_base58(OTHER_PARENT), OTHER_PARENT.replace("-", "").upper(), OTHER_PARENT],
    ids=["base58", "undashed", "dashed"],
)
def test_default_parent_id_in_any_notation(tmp_path: Path, parent: str) -> None:
    inv = read_inventory(
        str(write_csv(tmp_path / "inv.csv", [{"source": "a.mp4"}])), default_parent_id=parent
    )
    assert inv.rows["parent_id"].to_list() == [OTHER_PARENT]
    assert inv.rows["key"].to_list() == [_sha(f"{tmp_path / 'a.mp4'}\n{OTHER_PARENT}")]


BAD_PARENTS = [
    "project-42",
    "0f8fad5b-d9cb-469f-a165-70867728950",  # 35 characters
    "0f8fad5bd9cb469fa16570867728950g",  # 32 characters, not hex
    "0OIl" + "1" * 18,  # 22 characters outside the base58 alphabet
    "z" * 22,  # base58, but more than 128 bits
    "12345",
]


def test_anything_else_is_a_row_error_naming_row_field_and_value(tmp_path: Path) -> None:
    records = [{"source": "ok.mp4"}] + [
        {"source": f"{i}.mp4", "parent_id": p} for i, p in enumerate(BAD_PARENTS)
    ]
    inv = read_inventory(str(write_csv(tmp_path / "inv.csv", records)), default_parent_id=PARENT)
    assert [(e.row, e.field, e.value) for e in inv.errors] == [
        (row, "parent_id", p) for row, p in enumerate(BAD_PARENTS, start=2)
    ]
    for error in inv.errors:
        assert str(error).startswith(f"row {error.row}, field parent_id: not an identifier")
    assert inv.rows["row"].to_list() == [1]


@pytest.mark.parametrize("parent", BAD_PARENTS)
def test_a_bad_default_parent_id_is_refused(tmp_path: Path, parent: str) -> None:
    with pytest.raises(InventoryError, match="--parent-id .* is not an identifier"):
        read_inventory(str(write_csv(tmp_path / "inv.csv", [{"source": "a.mp4"}])), default_parent_id=parent)

"""The backup's metadata rules: what is kept of a service document, the inventory row, the change marks."""

from __future__ import annotations

import json
from typing import Any

from videoferry.connectors.inventory import read_inventory
from videoferry.connectors.models import Video
from videoferry.tasks.backup.held import Held
from videoferry.tasks.backup.index import Index, build_index, csv_bytes, parent_of
from videoferry.tasks.backup.metadata import (
    clean,
    content_mark,
    files_mark,
    inventory_row,
    listing_mark,
    metadata_document,
)

VIDEO: dict[str, Any] = {
    "id": "6f1c2a9e-0000-4000-8000-000000000001",
    "project_id": "6f1c2a9e-0000-4000-8000-0000000000aa",
    "version": 2,
    "title": "  Titel mit Leerzeichen",
    "description": "a\r\nb",
    "status": "done",
    "progress": 100,
    "tags": ["x;y", "z"],
    "chapters": {
        "items": [{"time": 0, "title": "A"}, {"time": 1500, "title": "B"}, {"time": 60000, "title": "C"}]
    },
    "privacy_type": "anywhere",
    "privacy_domains": ["stale.example.com"],
    "privacy_share": {
        "password": "hunter2",
        "link_hash": "abc123",
        "link": "https://h/x?hash=abc123",
        "sso": False,
    },
    "assets": [
        {
            "id": "6f1c2a9e-0000-4000-8000-0000000000bb",
            "quality": "original",
            "file_size": 10,
            "md5": "ABCDEF",
            "url": "https://cdn/v.mp4?sig=1",
            "download_link": "https://cdn/v.mp4?sig=1",
        }
    ],
    "poster": {"id": "p", "original": "https://cdn/p/original.jpg?token=t"},
    "some_new_field": {"kept": True},
}


def test_the_document_keeps_what_the_service_sent_but_no_link_secret_or_signature() -> None:
    video = Video.model_validate(VIDEO)
    document = metadata_document(video)
    text = json.dumps(document)
    for gone in ("sig=", "hunter2", "abc123", "download_link", "token=t"):
        assert gone not in text, gone
    assert document["poster"] == {"id": "p"}  # its image links go too: the document keeps no link
    assert document["some_new_field"] == {"kept": True} and document["privacy_share"] == {"sso": False}
    assert document["assets"][0]["md5"] == "ABCDEF" and "subtitle" not in document  # only what was sent
    assert clean({"Authorization": "x", "list": [{"url": "u", "n": 1}]}) == {"list": [{"n": 1}]}


def test_the_inventory_row_is_what_migrate_reads_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    video = Video.model_validate(VIDEO)
    row = inventory_row(video, "videos/v.mp4")
    assert json.loads(row["chapters"]) == [{"time": 0, "title": "A"}, {"time": 1.5, "title": "B"},
                                           {"time": 60, "title": "C"}]  # fmt: skip
    assert row["privacy_domains"] == ""  # domains only travel with custom (migrate refuses them otherwise)
    custom = Video.model_validate({**VIDEO, "privacy_type": "custom"})
    assert json.loads(inventory_row(custom, "s")["privacy_domains"]) == ["stale.example.com"]
    index = build_index({}, lambda copied: "")
    assert isinstance(index, Index) and index.rows == []
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "v.mp4").write_bytes(b"0123456789")
    (tmp_path / "inv.csv").write_bytes(csv_bytes([row]))
    read = read_inventory(str(tmp_path / "inv.csv"), default_parent_id=VIDEO["project_id"])
    assert read.errors == [] and read.warnings == []
    (spec,) = read.specs()
    assert spec.description == "a\r\nb" and list(spec.tags or []) == ["x;y", "z"]
    assert [c.time for c in spec.chapters or []] == [0, 1.5, 60]


def test_the_marks_move_with_what_they_watch_and_nothing_else() -> None:
    video = Video.model_validate(VIDEO)
    asset = video.assets[0]  # type: ignore[index]
    assert content_mark(video, asset) == "md5:abcdef"
    unsigned = Video.model_validate({**VIDEO, "assets": [{**VIDEO["assets"][0], "md5": None}]})
    assert content_mark(unsigned, unsigned.assets[0]).startswith("asset:")  # type: ignore[index]
    resigned = Video.model_validate(
        {
            **VIDEO,
            "progress": 50,
            "assets": [{**VIDEO["assets"][0], "download_link": "https://cdn/v.mp4?sig=2"}],
        }
    )
    assert listing_mark(resigned) == listing_mark(video)  # new signatures, progress: not a change
    assert listing_mark(
        Video.model_validate({**VIDEO, "updated_at": "2026-01-01T00:00:00Z"})
    ) != listing_mark(video)
    moved_poster = metadata_document(Video.model_validate({**VIDEO, "poster": {"id": "q"}}))
    assert files_mark(moved_poster) != files_mark(metadata_document(video))


def test_the_index_gives_each_row_its_saved_materials_and_migrate_reads_them_back(tmp_path: Any) -> None:
    video = Video.model_validate(VIDEO)
    row = inventory_row(video, "")
    assert row["attachments"] == ""  # filled by the index from what the files step saved
    folder = f"videos/{video.id}"
    files = [
        {"kind": "poster", "path": f"{folder}/poster.jpg", "object_key": "k1"},
        {"kind": "material", "path": f"{folder}/materials/m-1.pdf", "object_key": "k2"},
        {"kind": "material", "path": f"{folder}/materials/m-2.txt", "object_key": "k3"},
    ]
    held = Held(
        video.id,
        {
            "copy": {"path": f"{folder}/{video.id}.mp4"},
            "files": {"files": files},
            "metadata": {"row": {k: v for k, v in row.items() if k != "source"}},
        },
    )
    bare = Held("v-2", {"copy": {"path": "videos/v-2/v-2.mp4"}, "metadata": {"row": {"title": "no files"}}})
    index = build_index({video.id: held, "v-2": bare}, lambda copied: str(copied.get("path")))
    with_files = next(r for r in index.rows if r["title"] == video.title)
    assert json.loads(with_files["attachments"]) == [f["path"] for f in files[1:]]
    assert next(r for r in index.rows if r["title"] == "no files")["attachments"] == ""
    for path in [f"{folder}/{video.id}.mp4", "videos/v-2/v-2.mp4", *(f["path"] for f in files[1:])]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"bytes")
    (tmp_path / "inventory.csv").write_bytes(csv_bytes(index.rows))
    read = read_inventory(str(tmp_path / "inventory.csv"), default_parent_id=VIDEO["project_id"])
    assert read.errors == [] and read.warnings == []
    specs = {spec.source.rsplit("/", 1)[-1]: spec for spec in read.specs()}
    assert specs[f"{video.id}.mp4"].attachments == tuple(str(tmp_path / f["path"]) for f in files[1:])
    assert specs["v-2.mp4"].attachments == ()


def test_a_row_names_the_folder_its_video_lives_in_and_leaves_the_root_to_the_restore() -> None:
    folder = "6f1c2a9e-0000-4000-8000-0000000000ff"
    assert parent_of({"project_id": "p", "folder_id": folder}, None) == folder
    assert parent_of({"project_id": "p", "folder_id": None}, None) == ""  # the top of the project
    assert parent_of({"project_id": "p", "folder_id": folder}, folder.replace("-", "")) == ""  # --folder

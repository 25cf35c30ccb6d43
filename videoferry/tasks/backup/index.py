"""The backup's root: inventory.csv (an inventory `videoferry migrate` takes as it is), deleted.csv (the
videos kept after the service deleted them, in the same format) and the manifest of every object with its
md5 (manifest.json, manifest.parquet); rewritten from the ledger only when what they say changed."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from videoferry.connectors.ids import same_id
from videoferry.tasks.backup.held import Held
from videoferry.tasks.backup.metadata import INVENTORY_COLUMNS, digest
from videoferry.tasks.destination import Destination, LocalDestination

__all__ = [
    "INVENTORY",
    "DELETED",
    "MANIFEST_COLUMNS",
    "FORMAT",
    "Index",
    "build_index",
    "csv_bytes",
    "inventory_source",
    "parent_of",
    "write_index",
]

INVENTORY = "inventory.csv"
DELETED = "deleted.csv"
#: The manifest's format name (manifest.json's "format"): its columns below, its layout in README.
FORMAT = "videoferry-backup 1"
#: Columns of manifest.parquet (and keys of each object in manifest.json's "objects"). No link, no title.
MANIFEST_COLUMNS: dict[str, type[pl.DataType]] = {
    "video_id": pl.String,
    "state": pl.String,
    "kind": pl.String,
    "path": pl.String,
    "bytes": pl.Int64,
    "md5": pl.String,
    "quality": pl.String,
    "backed_up_at": pl.String,
    "gone_at": pl.String,
    "gone_why": pl.String,
}


@dataclass
class Index:
    """What the root's files say: the inventory rows, the deleted videos' rows, the manifest's objects."""

    rows: list[dict[str, str]] = field(default_factory=list)
    deleted: list[dict[str, str]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """One digest of all three: the index is written again only when it changes."""
        return digest({"rows": self.rows, "deleted": self.deleted, "objects": self.objects})


def _state(held: Held) -> tuple[str, Mapping[str, Any]]:
    gone = held.gone
    if gone is None:
        return "present", {}
    return ("moved" if gone.get("moved") else "deleted"), gone


def _objects(held: Held) -> list[dict[str, Any]]:
    state, gone = _state(held)
    common = {
        "video_id": held.video_id,
        "state": state,
        "gone_at": gone.get("at"),
        "gone_why": gone.get("why"),
    }
    found: list[dict[str, Any]] = []
    copied = held.copied
    if copied is not None:
        found.append(
            {
                **common,
                "kind": "video",
                "path": copied.get("path"),
                "bytes": copied.get("bytes"),
                "md5": copied.get("md5"),
                "quality": copied.get("quality"),
                "backed_up_at": copied.get("backed_up_at"),
            }
        )
    for item in (held.result("files") or {}).get("files", []):
        found.append({**common, **{k: item.get(k) for k in ("kind", "path", "bytes", "md5")}})
    metadata = held.result("metadata")
    if metadata is not None and metadata.get("md5"):
        found.append({**common, "kind": "metadata", **{k: metadata.get(k) for k in ("path", "bytes", "md5")}})
    return [{name: row.get(name) for name in MANIFEST_COLUMNS} for row in found]


def parent_of(metadata: Mapping[str, Any], root_folder: str | None) -> str:
    """A row's parent_id: the folder the video lives in (the metadata step's `folder_id`), so a restore puts
    it back there; "" for a video at the top of the backed-up project, or in the backed-up folder itself
    (`--folder`): the restore's `--parent-id` says where those go."""
    folder = metadata.get("folder_id")
    if not isinstance(folder, str) or not folder or (root_folder and same_id(folder, root_folder)):
        return ""
    return folder


def build_index(
    held: Mapping[str, Held], source_of: Callable[[Mapping[str, Any]], str], root_folder: str | None = None
) -> Index:
    """The index of every video the backup holds (the ledger's latest done steps), in the order the videos
    were made; source_of(copy result) names a file as the inventory's source column does; each row's
    parent_id is the video's folder (parent_of; root_folder: the backup's --folder)."""

    def order(entry: Held) -> tuple[str, str]:
        return (str((entry.result("metadata") or {}).get("created_at") or ""), entry.video_id)

    index = Index()
    for entry in sorted(held.values(), key=order):
        index.objects += _objects(entry)
        copied, metadata = entry.copied, entry.result("metadata")
        if copied is None or metadata is None or not isinstance(metadata.get("row"), Mapping):
            continue  # no file (none downloadable) or no metadata yet: migrate could not restore it
        row = {column: str(metadata["row"].get(column) or "") for column in INVENTORY_COLUMNS}
        row["source"] = source_of(copied)
        row["parent_id"] = parent_of(metadata, root_folder)
        row["attachments"] = _attachments((entry.result("files") or {}).get("files", []), source_of)
        (index.deleted if entry.gone is not None else index.rows).append(row)
    return index


def _attachments(files: list[Mapping[str, Any]], source_of: Callable[[Mapping[str, Any]], str]) -> str:
    """The attachments cell of a video's row: its saved materials as a JSON list of sources ("" for none),
    so `migrate inventory.csv` makes them materials of the restored video again."""
    sources = [source_of(f) for f in files if f.get("kind") == "material"]
    return json.dumps(sources, ensure_ascii=False) if sources else ""


def inventory_source(dest: Destination) -> Callable[[Mapping[str, Any]], str]:
    """How inventory.csv names a copied file: a path relative to the inventory in a directory (the folder
    can move), s3://bucket/key in S3 (`migrate --via url` presigns those)."""
    if isinstance(dest, LocalDestination):
        return lambda copied: str(copied.get("path"))
    return lambda copied: dest.source(str(copied.get("object_key")))


def csv_bytes(rows: list[dict[str, str]]) -> bytes:
    """Inventory rows as a UTF-8 CSV file: migrate's columns, RFC 4180 quoting (line breaks kept in cells)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(INVENTORY_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _file_row(name: str, data: bytes, written_at: str) -> dict[str, Any]:
    row = {
        "video_id": None,
        "state": "present",
        "kind": "inventory",
        "path": name,
        "bytes": len(data),
        "md5": hashlib.md5(data, usedforsecurity=False).hexdigest(),
        "backed_up_at": written_at,
    }
    return {name: row.get(name) for name in MANIFEST_COLUMNS}


def write_index(
    dest: Destination,
    index: Index,
    *,
    project_id: str,
    folder_id: str | None,
    written_at: datetime,
    had_deleted: bool,
) -> dict[str, Any]:
    """Write inventory.csv, deleted.csv (removed when no kept video is deleted any more), manifest.parquet and
    manifest.json, in that order (the manifest names the two inventories with their md5); what was written."""
    stamp = written_at.isoformat()
    inventory = csv_bytes(index.rows)
    dest.put_bytes(dest.key(INVENTORY), inventory, "text/csv; charset=utf-8")
    files = [_file_row(INVENTORY, inventory, stamp)]
    if index.deleted:
        deleted = csv_bytes(index.deleted)
        dest.put_bytes(dest.key(DELETED), deleted, "text/csv; charset=utf-8")
        files.append(_file_row(DELETED, deleted, stamp))
    elif had_deleted:
        dest.delete(dest.key(DELETED))
    objects = index.objects + files
    frame = pl.DataFrame(objects, schema=MANIFEST_COLUMNS)
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    dest.put_bytes(dest.key("manifest.parquet"), buffer.getvalue(), "application/octet-stream")
    document = {
        "format": FORMAT,
        "written_at": stamp,
        "project_id": project_id,
        "folder_id": folder_id,
        "inventory": INVENTORY,
        "deleted_inventory": DELETED if index.deleted else None,
        "videos": len(index.rows),
        "deleted_videos": len(index.deleted),
        "folders": sorted({r["parent_id"] for r in index.rows + index.deleted if r["parent_id"]}),
        "objects": objects,
    }
    text = json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8")
    dest.put_bytes(dest.key("manifest.json"), text, "application/json")
    return {
        "hash": index.digest,
        "videos": len(index.rows),
        "deleted": len(index.deleted),
        "objects": len(objects),
        "inventory_md5": files[0]["md5"],
    }

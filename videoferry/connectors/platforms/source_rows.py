"""A platform source migrated straight (`vimeo:`, `wistia:project/<id>`, `mux:`, `bunny:<library>`, ...):
listed now and made the inventory rows migrate reads, a block of columns per BATCH videos as the pages come
(no object kept per video: memory grows with the columns only), each folder put under its target parent by
the --folder-map file; where each item came from (its page, created date, folder) kept beside the rows."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from videoferry.connectors.ids import normal_id
from videoferry.connectors.platforms.base import PlatformClient, PlatformConfigError, SourceVideo
from videoferry.connectors.platforms.captions import fetch_captions
from videoferry.connectors.platforms.listing import (
    Listing,
    inventory_row,
    parse_platform_source,
    platform_client,
    stream_source,
    unmapped_notes,
)
from videoferry.connectors.platforms.origins import BATCH, Origin, Origins

#: The inventory columns a listed video fills (the rest of INPUT_COLUMNS stay empty).
ROW_COLUMNS = (
    "source",
    "key",
    "title",
    "description",
    "tags",
    "chapters",
    "privacy_type",
    "parent_id",
    "attachments",
)


@dataclass
class SourceRows:
    """The rows of one listing (ROW_COLUMNS, as text cells) in blocks of columns, notes to print, and each
    key's origin, and the calls the listing took. add() while listing, then frame()."""

    notes: list[str] = field(default_factory=list)
    calls: int = 0
    origins: Origins = field(default_factory=Origins)
    blocks: list[pl.DataFrame] = field(default_factory=list)

    def add(self, rows: list[dict[str, str | None]]) -> None:
        """Keep these rows, made a block of columns (their dicts are not kept)."""
        if rows:
            cells = [[r.get(c) for c in ROW_COLUMNS] for r in rows]
            self.blocks.append(pl.DataFrame(cells, dict.fromkeys(ROW_COLUMNS, pl.String), orient="row"))

    def frame(self) -> pl.DataFrame:
        """Every row kept, in the order added (the blocks as chunks, not copied)."""
        if not self.blocks:
            return pl.DataFrame(schema=dict.fromkeys(ROW_COLUMNS, pl.String))
        self.blocks = [pl.concat(self.blocks, rechunk=False)]
        return self.blocks[0]

    def keep_first(self) -> None:
        """A key added twice (a page shifted while listing) kept once, its first row: copied only then."""
        whole = self.frame()
        if whole["key"].is_duplicated().any():
            self.blocks = [whole.unique("key", keep="first", maintain_order=True)]


def read_folder_map(path: str | None) -> dict[str, str]:
    """The --folder-map file: a CSV with columns `folder` (a source folder's or project's id, or its name)
    and `parent_id` (the target project or folder); PlatformConfigError naming the row that is wrong."""
    if not path:
        return {}
    try:
        text = open(os.path.expanduser(path), encoding="utf-8-sig").read()  # noqa: SIM115 - read whole
    except OSError as exc:
        raise PlatformConfigError(f"--folder-map {path}: cannot read it ({exc.strerror})") from None
    reader = csv.DictReader(io.StringIO(text))
    names = [n.strip().lower() for n in reader.fieldnames or []]
    if "folder" not in names or "parent_id" not in names:
        raise PlatformConfigError(f"--folder-map {path}: the header must name folder and parent_id columns")
    found: dict[str, str] = {}
    for number, raw in enumerate(reader, start=2):
        row = {str(k).strip().lower(): (v or "").strip() for k, v in raw.items() if k is not None}
        folder, parent = row.get("folder", ""), row.get("parent_id", "")
        if not folder and not parent:
            continue
        if not folder:
            raise PlatformConfigError(f"--folder-map {path}, row {number}, field folder: missing")
        try:
            target = normal_id(parent)
        except ValueError as exc:
            raise PlatformConfigError(
                f"--folder-map {path}, row {number}, field parent_id: {parent[:60]!r} is {exc}"
            ) from None
        if found.get(folder, target) != target:
            raise PlatformConfigError(f"--folder-map {path}, row {number}: folder {folder!r} mapped twice")
        found[folder] = target
    return found


def source_rows(
    text: str,
    folder_map: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    *,
    captions: Path | None = None,
    chapters: bool = True,
    **client: Any,
) -> SourceRows:
    """List the source `text` names (access checked first: PlatformConfigError) and make its rows, BATCH
    videos at a time as the pages come; a video in a mapped folder (by id, else by name) goes under that
    parent, others under --parent-id. With `captions` (a directory), each video's captions are fetched into
    it and made the row's attachments. Without `chapters`, none are asked for (Vimeo: one call a video)."""
    source = parse_platform_source(text)
    if captions is not None and source.platform not in ("vimeo", "wistia"):
        raise PlatformConfigError(f"--captions: {source} has no captions to fetch (Vimeo and Wistia only)")
    out = SourceRows()
    listing = Listing(source)
    used: set[str] = set()
    with platform_client(source, os.environ if env is None else env, **client) as platform:
        batch: list[SourceVideo] = []
        for video in stream_source(source, platform, listing, chapters=chapters):
            batch.append(video)
            if len(batch) >= BATCH:
                _take(out, batch, platform, folder_map, used, captions)
        _take(out, batch, platform, folder_map, used, captions)
    out.keep_first()
    frame = out.frame()
    out.notes.extend(listing.notes)
    out.notes.extend(unmapped_notes(out.origins.unmapped()))
    if captions is not None:
        files = [len(json.loads(cell)) for cell in frame["attachments"].drop_nulls()]
        out.notes.append(
            f"captions: {sum(files)} files of {len(files)} videos in {captions}, attached as materials"
        )
    unused = sorted(set(folder_map) - used)
    if unused:
        out.notes.append(f"--folder-map names folders no listed video is in: {', '.join(unused)[:300]}")
    out.calls = listing.calls
    out.notes.append(f"listed {frame.height} videos from {source} in {listing.calls} calls")
    return out


def _take(
    out: SourceRows,
    batch: list[SourceVideo],
    platform: PlatformClient,
    folder_map: Mapping[str, str],
    used: set[str],
    captions: Path | None,
) -> None:
    """The batch's videos made rows and origins (their captions fetched first), the batch emptied."""
    rows = []
    for video in batch:
        row = _row(video, folder_map, used)
        attached = fetch_captions(platform, video.id, captions) if captions is not None else []
        if attached:
            row["attachments"] = json.dumps(attached, ensure_ascii=False)
        rows.append(row)
        out.origins.add(
            video.key,
            Origin(
                folder=video.folder,
                folder_id=video.folder_id,
                url=video.source_url,
                created=video.created,
                privacy=video.source_privacy,
                privacy_unmapped=video.privacy_type is None and bool(video.source_privacy),
                duration=video.duration,
                size=video.size,
                player_ids=video.player_ids,
            ),
        )
    out.add(rows)
    batch.clear()


def _row(video: SourceVideo, folder_map: Mapping[str, str], used: set[str]) -> dict[str, str | None]:
    row = inventory_row(video)
    cells: dict[str, str | None] = {c: _cell(row.get(c)) for c in ROW_COLUMNS}
    for name in (video.folder_id, video.folder):
        if name and name in folder_map:
            cells["parent_id"] = folder_map[name]
            used.add(name)
            break
    return cells


def _cell(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)

"""A platform source migrated straight (`vimeo:`, `wistia:project/<id>`, `mux:`, `bunny:<library>`, ...):
listed now and made the inventory rows migrate reads, each folder put under its target parent by the
--folder-map file; where each item came from (its page, created date, folder) kept beside the rows."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.ids import normal_id
from connectors.platforms.base import PlatformConfigError, SourceVideo
from connectors.platforms.captions import fetch_captions
from connectors.platforms.listing import inventory_row, list_source, parse_platform_source, platform_client

#: The inventory columns a listed video fills (the rest of INPUT_COLUMNS stay empty).
ROW_COLUMNS = ("source", "key", "title", "description", "tags", "chapters", "privacy_type", "parent_id")


@dataclass(frozen=True)
class Origin:
    """Where one item came from, as the report and the dry run say it (never a download link)."""

    folder: str | None
    folder_id: str | None
    url: str | None
    created: str | None
    privacy: str | None
    #: The platform's privacy has no match at the service (left as the target's default).
    privacy_unmapped: bool = False
    #: Seconds and bytes as the listing says them (None: not said).
    duration: float | None = None
    size: int | None = None
    #: The keys its player URLs name it by besides its own (SourceVideo.player_ids: Mux's playback ids).
    player_ids: tuple[str, ...] = ()


@dataclass
class SourceRows:
    """The rows of one listing (ROW_COLUMNS, as text cells), notes to print, and each key's origin."""

    rows: list[dict[str, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)


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
    **client: Any,
) -> SourceRows:
    """List the source `text` names (access checked first: PlatformConfigError) and make its rows; a video
    in a mapped folder (by id, else by name) goes under that parent, others under --parent-id. With
    `captions` (a directory), each video's captions are fetched into it and made the row's attachments."""
    source = parse_platform_source(text)
    if captions is not None and source.platform not in ("vimeo", "wistia"):
        raise PlatformConfigError(f"--captions: {source} has no captions to fetch (Vimeo and Wistia only)")
    attached: dict[str, list[str]] = {}
    with platform_client(source, os.environ if env is None else env, **client) as platform:
        listing = list_source(source, platform)
        if captions is not None:
            for video in listing.videos:
                attached[video.key] = fetch_captions(platform, video.id, captions)
    out = SourceRows(notes=list(listing.notes))
    if captions is not None:
        files = sum(len(paths) for paths in attached.values())
        with_any = sum(1 for paths in attached.values() if paths)
        out.notes.append(f"captions: {files} files of {with_any} videos in {captions}, attached as materials")
    used: set[str] = set()
    for video in listing.videos:
        row = _row(video, folder_map, used)
        if attached.get(video.key):
            row["attachments"] = json.dumps(attached[video.key], ensure_ascii=False)
        out.rows.append(row)
        out.origins[video.key] = Origin(
            folder=video.folder,
            folder_id=video.folder_id,
            url=video.source_url,
            created=video.created,
            privacy=video.source_privacy,
            privacy_unmapped=video.privacy_type is None and bool(video.source_privacy),
            duration=video.duration,
            size=video.size,
            player_ids=video.player_ids,
        )
    unused = sorted(set(folder_map) - used)
    if unused:
        out.notes.append(f"--folder-map names folders no listed video is in: {', '.join(unused)[:300]}")
    out.notes.append(f"listed {len(listing.videos)} videos from {source} in {listing.calls} calls")
    return out


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

"""A platform source (`vimeo:`, `vimeo:folder/<id>`, `wistia:`, `wistia:project/<hashed_id>`, `mux:`,
`cloudflare:`, `apivideo:`, `bunny:<library>`): its form read, its client from the environment, its listing
checked and written as an ordinary inventory (ids, never links)."""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from videoferry.connectors.platforms.apivideo import ApiVideoClient
from videoferry.connectors.platforms.base import PlatformClient, PlatformConfigError, SourceVideo
from videoferry.connectors.platforms.bunny import BunnyClient
from videoferry.connectors.platforms.cloudflare import CloudflareClient
from videoferry.connectors.platforms.mux import MuxClient
from videoferry.connectors.platforms.vimeo import VimeoClient
from videoferry.connectors.platforms.wistia import WistiaClient

#: The forms a platform source takes.
FORMS = (
    "vimeo:, vimeo:folder/<id>, wistia:, wistia:project/<hashed_id>, mux:, cloudflare:, apivideo: or"
    " bunny:<library id>"
)
_FORM = re.compile(
    r"^(?:(vimeo):(?:folder/(\d+))?|(wistia):(?:project/([A-Za-z0-9]+))?|(mux|cloudflare|apivideo):"
    r"|(bunny):(\d+))$"
)
#: The fourth wave's clients, each with check_access(folder), list_videos(folder) and `skipped`.
_CLIENTS: dict[str, type[MuxClient | CloudflareClient | ApiVideoClient | BunnyClient]] = {
    "mux": MuxClient,
    "cloudflare": CloudflareClient,
    "apivideo": ApiVideoClient,
    "bunny": BunnyClient,
}
#: What Mux, Cloudflare and Bunny leave out of a listing, as a note says it.
_SKIPPED = {
    "mux": "assets that are not ready (preparing or errored)",
    "cloudflare": "videos not ready to stream (uploading or encoding)",
    "bunny": "videos still uploading or encoding",
}
#: How many videos a note names.
NAMED = 10
#: The inventory's columns: those migrate takes (connectors/INVENTORY.md), then the platform's own, which
#: the inventory reader ignores (named in one warning).
COLUMNS = ("source", "key", "title", "description", "tags", "chapters", "privacy_type")
EXTRA_COLUMNS = (
    "platform_privacy",
    "platform_folder",
    "platform_folder_id",
    "platform_url",
    "platform_created",
)
FORMATS = (".csv", ".jsonl")


@dataclass(frozen=True)
class PlatformSource:
    """One source form: the platform, and the folder (Vimeo), project (Wistia) or library (Bunny, always
    given) it is limited to."""

    platform: str
    folder: str | None = None

    def __str__(self) -> str:
        if self.folder is None:
            return f"{self.platform}:"
        if self.platform == "bunny":
            return f"bunny:{self.folder}"
        return f"{self.platform}:{'folder' if self.platform == 'vimeo' else 'project'}/{self.folder}"


def is_platform_source(text: str) -> bool:
    """Whether `text` is meant as a platform source (it starts with a platform's name and a colon)."""
    return (
        text.strip().lower().startswith(("vimeo:", "wistia:", "mux:", "cloudflare:", "apivideo:", "bunny:"))
    )


def source_key_prefix(text: str) -> str:
    """The prefix of the ledger keys of a source's items: `vimeo:` for any Vimeo source (`wistia:`,
    `mux:`, `cloudflare:`, `apivideo:` likewise), `bunny:<library>/` for a Bunny library's, `youtube:` for
    a YouTube Takeout; PlatformConfigError naming the forms otherwise."""
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered.startswith("youtube"):
        return "youtube:"
    if lowered.startswith("bunny:"):
        return f"{parse_platform_source(stripped)}/"
    for platform in ("vimeo", "wistia", *_CLIENTS):
        if lowered.startswith(f"{platform}:"):
            return f"{platform}:"
    raise PlatformConfigError(f"{text!r} is not a source: expected {FORMS} or youtube-takeout:PATH")


def parse_platform_source(text: str) -> PlatformSource:
    """The source a form names; PlatformConfigError naming the forms when it is none of them."""
    match = _FORM.match(text.strip())
    if not match:
        raise PlatformConfigError(f"{text!r} is not a platform source: expected {FORMS}")
    vimeo, folder, wistia, project, other, bunny, library = match.groups()
    if vimeo:
        return PlatformSource("vimeo", folder)
    if wistia:
        return PlatformSource(wistia, project)
    if bunny:
        return PlatformSource(bunny, library)
    return PlatformSource(other)


def platform_client(source: PlatformSource, env: Mapping[str, str], **options: Any) -> PlatformClient:
    """The source's client from the environment (its token and API address variables)."""
    if source.platform == "vimeo":
        return VimeoClient.from_env(env, **options)
    if source.platform in _CLIENTS:
        return _CLIENTS[source.platform].from_env(env, **options)
    return WistiaClient.from_env(env, **options)


@dataclass
class Listing:
    """What a source listed: its videos in listing order, and the notes a run prints about it."""

    source: PlatformSource
    videos: list[SourceVideo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    calls: int = 0


def list_source(source: PlatformSource, client: PlatformClient, *, chapters: bool = True) -> Listing:
    """Check the client's access (PlatformConfigError: exit 2), then list the source whole, its videos kept
    in `.videos` (stream_source() hands them on one at a time instead). A video listed twice (a page
    shifted while listing) is kept once."""
    listing = Listing(source)
    seen: set[str] = set()
    for video in stream_source(source, client, listing, chapters=chapters):
        if video.key in seen:
            continue
        seen.add(video.key)
        listing.videos.append(video)
    unmapped = sum(1 for v in listing.videos if v.privacy_type is None and v.source_privacy)
    listing.notes.extend(unmapped_notes(unmapped))
    return listing


def stream_source(
    source: PlatformSource, client: PlatformClient, listing: Listing, *, chapters: bool = True
) -> Iterator[SourceVideo]:
    """The source's videos as its pages come (none kept here): the client's access checked first
    (PlatformConfigError: exit 2), then each video as listed; a video listed twice (a page shifted while
    listing) comes twice, the consumer keeps the first. Once the last page is read, `listing` has the notes
    of what the listing left out and its calls (not the privacy note: unmapped_notes())."""
    videos: Iterable[SourceVideo]
    if isinstance(client, VimeoClient):
        plan = client.check_access()
        listing.notes.append(f"vimeo account plan: {plan}")
        videos = client.list_videos(source.folder, chapters=chapters)
    else:
        assert isinstance(client, (WistiaClient, MuxClient, CloudflareClient, ApiVideoClient, BunnyClient))
        client.check_access(source.folder)
        videos = client.list_videos(source.folder)
    yield from videos
    skipped = client.skipped if isinstance(client, WistiaClient) else 0
    if skipped:
        assert isinstance(client, WistiaClient)
        named = ", ".join(client.left_out[:20]) + (", ..." if skipped > 20 else "")
        listing.notes.append(
            f"left out {skipped} medias that are not videos (images, audio, documents): {named}"
        )
    listing.notes.extend(_fourth_wave_notes(client))
    listing.calls = client.calls


def unmapped_notes(unmapped: int) -> list[str]:
    """The note on `unmapped` videos whose privacy has no match at the service (none when there are none)."""
    if not unmapped:
        return []
    return [
        f"{unmapped} videos have a privacy the service has no match for (platform_privacy column):"
        " privacy_type left empty"
    ]


def _fourth_wave_notes(client: PlatformClient) -> list[str]:
    """What a Mux, Cloudflare, api.video or Bunny listing left out, and the api.video videos that cannot
    be fetched (no MP4 support), named."""
    notes: list[str] = []
    if isinstance(client, (MuxClient, CloudflareClient, BunnyClient)) and client.skipped:
        notes.append(f"left out {client.skipped} {_SKIPPED[client.platform]}")
    if isinstance(client, ApiVideoClient) and client.no_mp4:
        named = ", ".join(f"apivideo:{v}" for v in client.no_mp4[:NAMED]) + (
            ", ..." if len(client.no_mp4) > NAMED else ""
        )
        notes.append(
            f"{len(client.no_mp4)} videos have no MP4 support (uploaded without mp4Support) and cannot be"
            f" fetched: {named}"
        )
    return notes


def inventory_row(video: SourceVideo) -> dict[str, Any]:
    """One video's inventory row: `source` and `key` its stable id (`vimeo:<id>`), never a link."""
    return {
        "source": video.key,
        "key": video.key,
        "title": video.title,
        "description": video.description,
        "tags": list(video.tags) if video.tags else None,
        "chapters": (
            [{"time": c.time, "title": c.title} for c in video.chapters]
            if video.chapters is not None
            else None
        ),
        "privacy_type": video.privacy_type,
        "platform_privacy": video.source_privacy,
        "platform_folder": video.folder,
        "platform_folder_id": video.folder_id,
        "platform_url": video.source_url,
        "platform_created": video.created,
    }


def write_inventory(videos: Iterable[SourceVideo], path: Path) -> int:
    """Write the videos as an inventory (.csv: RFC 4180, UTF-8, lists as JSON; .jsonl: one object a line),
    whole or not at all (a temporary file renamed). Returns the rows written."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise PlatformConfigError(f"--out {path}: the inventory is written as {' or '.join(FORMATS)}")
    if not path.parent.is_dir():
        raise PlatformConfigError(f"--out {path}: no directory {path.parent}")
    part = path.with_name(f".{path.name}.part")
    rows = 0
    with part.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=[*COLUMNS, *EXTRA_COLUMNS]) if suffix == ".csv" else None
        if writer is not None:
            writer.writeheader()
        for video in videos:
            row = inventory_row(video)
            if writer is not None:
                writer.writerow({k: _cell(v) for k, v in row.items()})
            else:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            rows += 1
    os.replace(part, path)
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)

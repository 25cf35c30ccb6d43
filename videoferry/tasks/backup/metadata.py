"""A video's metadata as the backup keeps it: the service's document without links or secrets, its hash, its
inventory row (the fields `videoferry migrate` sets), and the marks that say whether it changed."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from videoferry.connectors.inventory import INPUT_COLUMNS
from videoferry.connectors.models import Asset, Video
from videoferry.core.redact import sanitize, scrub_urls

__all__ = [
    "INVENTORY_COLUMNS",
    "LINK_KEYS",
    "clean",
    "content_mark",
    "digest",
    "files_mark",
    "inventory_row",
    "listing_mark",
    "metadata_document",
]

#: Fields holding a signed link or a share capability: never kept (spec 2.2 `url`, `download_link`; a
#: privacy_share's `link` / `link_hash`); every `*_link` and every URL value go too (clean). Secret-named
#: fields (password, token, ...) go too (core/redact).
LINK_KEYS = frozenset({"url", "download_link", "link", "link_hash"})
#: inventory.csv's columns: exactly what `videoferry migrate` reads (connectors/INVENTORY.md), in its order.
INVENTORY_COLUMNS: tuple[str, ...] = INPUT_COLUMNS
#: Fields of a listed video that change without the video changing (processing progress).
VOLATILE = frozenset({"progress"})


#: A value that is a URL (and nothing else): `scheme://...`.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://\S*$")


def _is_link(key: str, value: Any) -> bool:
    """A field holding a link: named so (LINK_KEYS, `*_link`: play, embed, hls), or whose value is a URL (a
    poster's image links)."""
    return key in LINK_KEYS or key.endswith("_link") or (isinstance(value, str) and bool(_URL.match(value)))


def clean(value: Any) -> Any:
    """A copy of a service document without links, secrets or query strings: link fields (LINK_KEYS, the
    player's `play_link`, `embed_link`, `hls_link`, any `*_link`), fields whose value is a URL (a poster's
    image links) and secret-named fields dropped at any depth; a URL inside free text cut to its scheme,
    host and path."""
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in sanitize(value).items() if not _is_link(str(k), v)}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, str) and "://" in value:
        return scrub_urls(value)
    return value


def digest(value: Any) -> str:
    """sha256 of a JSON document in one canonical form (sorted keys): equal documents, equal digests."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def metadata_document(video: Video) -> dict[str, Any]:
    """The video as the service gave it (the fields it sent, unknown ones too), cleaned (clean())."""
    document: dict[str, Any] = clean(video.model_dump(mode="json", exclude_unset=True))
    return document


def listing_mark(video: Video) -> str:
    """What a listed video shows, as one digest: when it is what the last backup saw, the video is not read
    again (the list lacks tags and a few fields, spec 2.1; a change of those moves `updated_at`)."""
    shown = {k: v for k, v in metadata_document(video).items() if k not in VOLATILE}
    return digest(shown)


def content_mark(video: Video, asset: Asset) -> str:
    """What decides that a video's file changed: the asset's md5 when the service gives one, else its id,
    size and the video's version (the bytes of a version and asset are the same bytes)."""
    if asset.md5:
        return f"md5:{asset.md5.lower()}"
    return f"asset:{asset.id}:{asset.file_size}:{video.version}"


def files_mark(document: Mapping[str, Any]) -> str:
    """What decides that a video's other files changed: its poster, subtitles and additional materials as the
    cleaned document shows them (ids, sizes, names; no link)."""
    return digest({k: document.get(k) for k in ("poster", "subtitles", "additional_materials")})


def _seconds(milliseconds: int) -> int | float:
    """A chapter time as the inventory writes it: seconds, whole when they are (10000 ms -> 10)."""
    return milliseconds // 1000 if milliseconds % 1000 == 0 else milliseconds / 1000


def inventory_row(video: Video, source: str) -> dict[str, str]:
    """The video's row of inventory.csv: every field migrate can set, as migrate reads it (JSON lists for
    tags, chapters and domains; chapter times in seconds). parent_id and key stay empty here: the index fills
    parent_id with the folder the video lives in (build_index), and migrate derives each key from source and
    parent (restores into two projects from one ledger stay apart)."""
    chapters = video.chapters.items if video.chapters is not None else []
    privacy = video.privacy_type or ""
    row = {
        "source": source,
        "title": video.title or "",
        "parent_id": "",
        "description": video.description or "",
        "key": "",
        "tags": json.dumps(list(video.tags), ensure_ascii=False) if video.tags else "",
        "chapters": json.dumps(
            [{"time": _seconds(c.time), "title": c.title} for c in chapters], ensure_ascii=False
        )
        if chapters
        else "",
        "privacy_type": privacy,
        "privacy_domains": json.dumps(list(video.privacy_domains or []), ensure_ascii=False)
        if privacy == "custom"
        else "",
        "attachments": "",  # the saved materials' sources: filled by the index (tasks/backup/index.py)
    }
    return {column: row[column] for column in INVENTORY_COLUMNS}

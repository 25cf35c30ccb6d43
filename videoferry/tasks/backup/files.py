"""A video's other files in its backup: the poster, and the subtitles and additional materials the service
gives a link to; each streamed and checked like the video's own file."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from videoferry.connectors.download import DownloadError
from videoferry.connectors.models import Video
from videoferry.tasks.backup.held import video_dir
from videoferry.tasks.streamed_copy import copy_link

if TYPE_CHECKING:
    from videoferry.tasks.backup.video import BackupContext

__all__ = ["ExtraFile", "extra_files", "save_files"]

#: Answers that say a link gives nothing to anyone (noted in the result, not a failure of the video).
NOT_DOWNLOADABLE = (401, 403, 404, 410)
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
#: Characters a material's file name never keeps: path separators, and those Windows or shells refuse.
_UNSAFE_NAME = re.compile(r'[/\\:*?"<>|]+')
#: The longest a kept file name is, in UTF-8 bytes (most file systems allow 255).
NAME_BYTES = 120


@dataclass(frozen=True)
class ExtraFile:
    """One file beside the video: its kind (poster, subtitle, material), its name in the video's folder, its
    link (a secret: never stored or shown) and its size when the service says."""

    kind: str
    name: str
    link: str
    size: int | None = None


def _suffix(*candidates: object, default: str) -> str:
    for text in candidates:
        if isinstance(text, str) and text:
            path = urlsplit(text).path if "://" in text else text
            tail = path.rsplit("/", 1)[-1]
            if "." in tail:
                suffix = tail.rsplit(".", 1)[-1].lower()
                if re.fullmatch(r"[a-z0-9]{1,5}", suffix):
                    return suffix
    return default


def _items(value: Any) -> list[Mapping[str, Any]]:
    """The entries of a list the spec shows no shape for (subtitles, materials): a list, or {items: [...]}."""
    if isinstance(value, Mapping):
        value = value.get("items") or value.get("data") or []
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def safe_name(name: object) -> str:
    """A file name the service shows, made safe to keep: NFC, no control characters or path separators,
    no leading dots or spaces (so never `.` or `..`), at most NAME_BYTES bytes with its extension kept;
    "" when nothing is left."""
    if not isinstance(name, str):
        return ""
    text = unicodedata.normalize("NFC", name)
    text = "".join(" " if unicodedata.category(c).startswith("C") else c for c in text)
    text = _UNSAFE_NAME.sub("_", text).strip(" .")
    text = re.sub(r"\s+", " ", text)
    if len(text.encode("utf-8")) <= NAME_BYTES:
        return text
    stem, dot, ext = text.rpartition(".")
    tail = f".{ext}" if dot and stem and len(ext.encode("utf-8")) <= 16 else ""
    head = text[: len(text) - len(tail)] if tail else text
    while len((head + tail).encode("utf-8")) > NAME_BYTES:
        head = head[:-1]
    return (head.rstrip(" .") + tail).strip(" .")


def _link(item: Mapping[str, Any]) -> str | None:
    return next((item[k] for k in ("download_link", "url") if isinstance(item.get(k), str) and item[k]), None)


def _entry(kind: str, folder: str, number: int, item: Mapping[str, Any]) -> ExtraFile | None:
    link = _link(item)
    if link is None:
        return None
    ident = _SAFE.sub("", str(item.get("id") or ""))[:64] or f"{number:03d}"
    ext = _suffix(item.get("original_name"), item.get("name"), item.get("filetype"), link, default="bin")
    size = item.get("file_size") if isinstance(item.get("file_size"), int) else None
    if kind == "material":  # restored by migrate under this name: the original one, in a folder of its id
        shown = safe_name(item.get("original_name")) or safe_name(item.get("name"))
        return ExtraFile(kind, f"{folder}/{ident}/{shown or f'{ident}.{ext}'}", link, size)
    return ExtraFile(kind, f"{folder}/{ident}.{ext}", link, size)


def extra_files(video: Video) -> list[ExtraFile]:
    """The files beside the video that have a link: the poster's largest image, each subtitle (named by id)
    and each additional material (`materials/<id>/<its own name, made safe>`: a restore attaches it under
    that name; `<id>.<ext>` in that folder when the service shows none)."""
    found: list[ExtraFile] = []
    poster = video.poster
    if poster is not None and poster.original:
        found.append(
            ExtraFile("poster", f"poster.{_suffix(poster.original, default='jpg')}", poster.original)
        )
    for number, item in enumerate(_items(video.subtitles), 1):
        entry = _entry("subtitle", "subtitles", number, item)
        found += [entry] if entry else []
    for number, item in enumerate(_items(video.additional_materials), 1):
        entry = _entry("material", "materials", number, item)
        found += [entry] if entry else []
    return found


def _unlinked(video: Video) -> list[str]:
    """A note when the service shows additional materials without a link (nothing to save: a restore has
    no such material)."""
    unlinked = [item for item in _items(video.additional_materials) if _link(item) is None]
    return [f"materials shown without a link: {len(unlinked)} (not saved)"] if unlinked else []


def save_files(ctx: BackupContext, video: Video) -> tuple[list[dict[str, Any]], list[str]]:
    """Copy every extra file of the video into its folder; (the files saved, notes on materials shown
    without a link and on links that give nothing). A download that keeps failing otherwise raises (the
    step fails; the next run tries again)."""
    saved: list[dict[str, Any]] = []
    notes = _unlinked(video)
    for extra in extra_files(video):
        path = (*video_dir(video.id), *extra.name.split("/"))
        key = ctx.dest.key(*path)
        try:
            copied = copy_link(
                ctx.dest,
                ctx.downloader,
                extra.link,
                key,
                size=extra.size,
                md5=None,
                attempts=ctx.attempts,
                backoff=ctx.backoff,
            )
        except DownloadError as exc:
            if exc.status not in NOT_DOWNLOADABLE:
                raise
            notes.append(f"{extra.kind} {extra.name} not saved: its link answered HTTP {exc.status}")
            continue
        saved.append(
            {
                "kind": extra.kind,
                "path": "/".join(path),
                "object_key": key,
                "bytes": copied.size,
                "md5": copied.md5,
            }
        )
    return saved, notes

"""Check: one item against its video, field by field and byte by byte: a line of rclone's combined format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from videoferry.connectors.ids import same_id
from videoferry.connectors.models import Asset, Video
from videoferry.core.item import ItemSpec, VideoStatus
from videoferry.core.tidy import same_chapters, same_description, same_tags, same_title, title_cut
from videoferry.tasks.lookup import original_size
from videoferry.tasks.sessions import missing_materials

#: Two durations closer than this (seconds) are the same (containers and transcodes round differently).
DURATION_TOLERANCE = 0.5
#: The note of an item whose bytes the service gives no way to compare (spec convention 7).
NO_ORIGINAL = "bytes not compared: the service keeps no original of this video (spec convention 7)"


class Mark(StrEnum):
    """The symbols of rclone's combined output, and `~` (ours): a difference this ledger's apply explains."""

    SAME = "="
    MISSING = "-"  #: in the inventory, not in the service
    EXTRA = "+"  #: in the service, no item accounts for it
    DIFFERS = "*"
    ERROR = "!"  #: could not be checked
    EXPLAINED = "~"  #: differs, or is only in the service, as this ledger's own apply left it (not counted)


@dataclass(frozen=True)
class SourceFacts:
    """What is known of an item's source bytes: size, md5 (when read), or why they could not be read."""

    size: int | None = None
    md5: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class CheckLine:
    """One line of the check: an item (or a video no item accounts for), its mark and what differs."""

    mark: Mark
    key: str | None
    row: int | None
    title: str | None
    video_id: str | None = None
    fields: tuple[str, ...] = ()
    note: str = ""
    bytes_by: str = ""  #: md5, download-md5, size, duration or "" (not compared)

    def text(self) -> str:
        """The line as printed: `<mark> <key> "<title>" [video <id>][: fields][ (note)]`."""
        name = self.key if self.key is not None else f"video {self.video_id}"
        out = f'{self.mark.value} {name} "{self.title or ""}"'
        if self.key is not None and self.video_id:
            out += f" video {self.video_id}"
        if self.fields:
            out += ": differs in " + ", ".join(self.fields)
        if self.note:
            out += f" ({self.note})"
        return out

    def report_row(self) -> dict[str, Any]:
        """The line as a report row (no source: it may be a signed URL)."""
        return {
            "mark": self.mark.value,
            "key": self.key,
            "row": self.row,
            "title": self.title,
            "video_id": self.video_id,
            "fields": ", ".join(self.fields),
            "bytes_by": self.bytes_by,
            "note": self.note,
        }


def original_asset(video: Video) -> Asset | None:
    """The video's original asset, when the service kept one (spec convention 7)."""
    for asset in video.assets or []:
        if asset.quality == "original" and asset.deleted_at is None:
            return asset
    return None


def in_parent(video: Video, parent_id: str) -> bool:
    """Whether the video is in the project or folder (any id notation); an empty parent holds everything."""
    return not parent_id or same_id(parent_id, video.project_id) or same_id(parent_id, video.folder_id)


def directly_in(video: Video, parent_id: str) -> bool:
    """Whether the video lives right in the project or folder: in the folder, or in the project outside its
    folders (the scope of check's `+` lines: a project's folders are other parents)."""
    if not parent_id:
        return True
    if video.folder_id:
        return same_id(parent_id, video.folder_id)
    return same_id(parent_id, video.project_id)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def metadata_fields(spec: ItemSpec, video: Video) -> list[str]:
    """The fields the inventory asks for that the video does not have (a field the row leaves empty: any).

    Compared under core/tidy.py's rules: a field the service keeps in another form (whitespace collapsed and
    trimmed, NFC, tags lower-cased or deduplicated, chapter titles trimmed, a title cut to its cap) is not a
    difference. A cut title is said in the line's note (title_note). An attachment the video holds no
    material of (by file name: tasks/sessions.py) is a difference in "attachments".
    """
    differ: list[str] = []
    if not same_title(spec.title, video.title or ""):
        differ.append("title")
    if spec.description and not same_description(spec.description, video.description):
        differ.append("description")
    if spec.tags and not same_tags(spec.tags, video.tags or []):
        differ.append("tags")
    if spec.privacy_type and video.privacy_type != spec.privacy_type.value:
        differ.append("privacy_type")
    if spec.privacy_domains and _domains(video.privacy_domains or []) != _domains(spec.privacy_domains):
        differ.append("privacy_domains")
    if spec.chapters:
        have = [(c.time, c.title) for c in (video.chapters.items if video.chapters else [])]
        want = [(_ms(c.time), c.title) for c in spec.chapters]
        if not same_chapters(want, have):
            differ.append("chapters")
    if spec.attachments and missing_materials(video, spec.attachments):
        differ.append("attachments")
    return differ


def _domains(values: Sequence[str]) -> set[str]:
    return {value.strip().lower() for value in values}


#: The note of an item whose video's title the service cut to its cap (a warning, not a difference).
TITLE_CUT = "title cut by the service to its cap"


def title_note(spec: ItemSpec, video: Video) -> str:
    """The warning of a title the service cut ("" when it did not): the same title, kept shorter."""
    if video.title is None or not title_cut(spec.title, video.title):
        return ""
    return f"{TITLE_CUT} ({len(video.title)} characters)"


def needs_md5(video: Video, download_md5: bool) -> bool:
    """Whether comparing this video's bytes needs the source's md5 (the service gives one, or we download)."""
    asset = original_asset(video)
    if asset is None:
        return False
    return bool(asset.md5) or (download_md5 and bool(asset.download_link))


def compare_bytes(
    video: Video,
    facts: SourceFacts,
    *,
    downloaded_md5: str | None = None,
    duration: float | None = None,
) -> tuple[list[str], str, str]:
    """(differing fields, compared by, note) for the bytes: md5, else size, else duration when given."""
    asset = original_asset(video)
    if asset is None or original_size(video) is None:
        if duration is not None and video.duration is not None:
            if abs(video.duration - duration) > DURATION_TOLERANCE:
                return ["duration"], "duration", NO_ORIGINAL
            return [], "duration", NO_ORIGINAL + "; duration matches"
        return [], "", NO_ORIGINAL
    if facts.error is not None:
        return [], "", f"source not read: {facts.error}"
    differ: list[str] = []
    by = ""
    if facts.size is not None:
        by = "size"
        if asset.file_size != facts.size:
            differ.append("size")
    remote_md5 = asset.md5 or downloaded_md5
    if remote_md5 and facts.md5:
        by = "md5" if asset.md5 else "download-md5"
        if remote_md5.lower() != facts.md5.lower():
            differ.append("md5")
    if not by:
        return differ, "", "bytes not compared: the source's size is unknown (http(s) sources are not read)"
    return differ, by, ""


def compare_item(
    spec: ItemSpec,
    video: Video,
    facts: SourceFacts,
    *,
    downloaded_md5: str | None = None,
    download_error: str | None = None,
    duration: float | None = None,
) -> CheckLine:
    """The check line of an item whose video was found: = when everything matches, * naming what differs,
    ! when the bytes could not be checked though the service gives a way (source unreadable, download failed).
    """
    differ: list[str] = []
    if video.status != VideoStatus.DONE:
        differ.append("status")
    if not in_parent(video, spec.parent_id):
        differ.append("parent")
    differ += metadata_fields(spec, video)
    byte_fields, by, note = compare_bytes(video, facts, downloaded_md5=downloaded_md5, duration=duration)
    differ += byte_fields
    note = _join(title_note(spec, video), note) if title_note(spec, video) else note
    if video.status != VideoStatus.DONE:
        note = _join(f"status {video.status}", note)
    if download_error:
        note = _join(f"download not hashed: {download_error}", note)
    mark = Mark.DIFFERS if differ else Mark.SAME
    if not differ and (facts.error is not None or download_error) and original_asset(video) is not None:
        mark = Mark.ERROR
    return CheckLine(mark, spec.key, spec.row, spec.title, video.id, tuple(differ), note, by)


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if second else first


def missing_line(spec: ItemSpec, note: str, video_id: str | None = None) -> CheckLine:
    """An item with no video in the service."""
    return CheckLine(Mark.MISSING, spec.key, spec.row, spec.title, video_id, (), note)


def error_line(spec: ItemSpec, note: str, video_id: str | None = None) -> CheckLine:
    """An item that could not be checked."""
    return CheckLine(Mark.ERROR, spec.key, spec.row, spec.title, video_id, (), note)


def extra_line(video: Video, note: str = "no item accounts for it") -> CheckLine:
    """A video in a checked parent that no inventory item accounts for."""
    return CheckLine(Mark.EXTRA, None, None, video.title, video.id, (), note)


def counts(lines: Sequence[CheckLine]) -> dict[str, int]:
    """How many lines carry each mark (every mark present, zeros included)."""
    return {m.value: sum(1 for line in lines if line.mark is m) for m in Mark}

"""A YouTube Takeout (`youtube-takeout:PATH`, an unpacked folder or its .zip): `video metadata/videos.csv`
matched with the files of `videos/` by the normalised title YouTube names them by; each item keyed
`youtube:<video id>`, every file and row left unmatched listed."""

from __future__ import annotations

import csv
import io
import re
import unicodedata
import zipfile
from collections import defaultdict
from pathlib import Path

from videoferry.connectors.platforms.base import PlatformConfigError
from videoferry.connectors.platforms.origins import Origin
from videoferry.connectors.platforms.source_rows import SourceRows

PREFIX = "youtube-takeout:"
METADATA = ("video metadata", "videos.csv")
#: videos.csv's columns as Google's data portability schema names them (matched without case).
ID_COLUMN = "video id"
TITLE_COLUMNS = ("video title (original)", "video title")
DESCRIPTION_COLUMNS = ("video description (original)", "video description")
#: YouTube's privacy -> the service's privacy_type; `unlisted` has no match (the target's default).
PRIVACY = {"public": "anywhere", "private": "nowhere"}
#: What a file name cannot hold (Windows' reserved characters and controls): the export writes `_`.
_RESERVED = re.compile(r'[\\/:*?"<>|\x00-\x1f]')
#: The suffix the export adds to a second file of the same title: `Title(1).mp4`.
_COPY = re.compile(r"\s*\((\d+)\)$")
VIDEO_SUFFIXES = frozenset({".mp4", ".mov", ".m4v", ".webm", ".mkv", ".avi", ".flv", ".3gp", ".wmv", ".mpg"})


def is_takeout_source(text: str) -> bool:
    """Whether `text` names a YouTube Takeout (`youtube-takeout:PATH`)."""
    return text.strip().lower().startswith(PREFIX)


def title_key(title: str) -> str:
    """The normalised title a video's file is matched by: NFC, reserved characters as `_`, white space
    collapsed, trailing dots and spaces dropped, without case."""
    text = _RESERVED.sub("_", unicodedata.normalize("NFC", title))
    return re.sub(r"\s+", " ", text).strip().rstrip(". ").casefold()


def takeout_rows(text: str) -> SourceRows:
    """The Takeout's videos as inventory rows (the file as source, `youtube:<id>` as key); a .zip is
    unpacked beside itself first (`<name>.unpacked/`, kept for the reruns). PlatformConfigError when the
    path or its videos.csv is not there or cannot be read."""
    root = _root(Path(text.strip()[len(PREFIX) :]).expanduser())
    metadata = _find_metadata(root)
    videos_dir = metadata.parent.parent / "videos"
    files = sorted(p for p in videos_dir.iterdir() if p.is_file()) if videos_dir.is_dir() else []
    by_title: dict[str, list[Path]] = defaultdict(list)
    for path in files:
        stem = path.stem
        copy = _COPY.search(stem)
        by_title[title_key(stem[: copy.start()] if copy else stem)].append(path)
    for paths in by_title.values():  # Title.mp4 first, then Title(1).mp4, Title(2).mp4 ...
        paths.sort(key=lambda p: (int(m.group(1)) if (m := _COPY.search(p.stem)) else -1, p.name))
    out = SourceRows()
    rows: list[dict[str, str | None]] = []
    unmatched_rows: list[str] = []
    for number, row in _read_rows(metadata):
        video_id = _cell(row, (ID_COLUMN,))
        title = _cell(row, TITLE_COLUMNS)
        if not video_id or title is None:
            unmatched_rows.append(f"row {number} (no {'Video ID' if not video_id else 'title'})")
            continue
        candidates = by_title.get(title_key(title))
        if not candidates:
            unmatched_rows.append(f"row {number} ({video_id}, {title[:60]!r})")
            continue
        path = candidates.pop(0)
        privacy = (_cell(row, ("privacy",)) or "").lower() or None
        key = f"youtube:{video_id}"
        rows.append(
            {
                "source": str(path.resolve()),
                "key": key,
                "title": title,
                "description": _cell(row, DESCRIPTION_COLUMNS),
                "privacy_type": PRIVACY.get(privacy or ""),
            }
        )
        out.origins.add(
            key,
            Origin(
                folder=None,
                folder_id=None,
                url=f"https://www.youtube.com/watch?v={video_id}",
                created=_cell(row, ("video create timestamp",)),
                privacy=privacy,
                privacy_unmapped=privacy is not None and privacy not in PRIVACY,
                duration=_seconds(_cell(row, ("approx duration (ms)",))),
                size=path.stat().st_size,
            ),
        )
    out.add(rows)
    unmapped = out.origins.unmapped()
    if unmapped:
        out.notes.append(
            f"{unmapped} videos have a privacy at the source the service has no match for (unlisted):"
            " left as the target's default"
        )
    left = [p for paths in by_title.values() for p in paths]
    out.notes.append(f"matched {len(rows)} videos of {metadata} with files of {videos_dir}")
    if unmatched_rows:
        out.notes.append(
            f"{len(unmatched_rows)} rows of videos.csv have no file: {'; '.join(unmatched_rows)}"
        )
    if left:
        names = ", ".join(sorted(p.name for p in left))
        kind = "" if all(p.suffix.lower() in VIDEO_SUFFIXES for p in left) else " (some are not videos)"
        out.notes.append(f"{len(left)} files of videos/ match no row of videos.csv{kind}: {names}")
    return out


def _root(path: Path) -> Path:
    if path.is_dir():
        return path
    if path.is_file() and path.suffix.lower() == ".zip":
        target = path.with_name(path.stem + ".unpacked")
        done = target / ".videoferry-unpacked"
        if not done.exists():
            try:
                with zipfile.ZipFile(path) as archive:
                    archive.extractall(target)  # zipfile keeps every member under target
            except (zipfile.BadZipFile, OSError) as exc:
                raise PlatformConfigError(f"youtube-takeout:{path}: cannot unpack it ({exc})") from None
            done.write_text(f"{path.stat().st_size}\n")
        return target
    raise PlatformConfigError(f"youtube-takeout:{path}: no such folder or .zip")


def _find_metadata(root: Path) -> Path:
    found = sorted(p for p in root.rglob(METADATA[1]) if p.parent.name.lower() == METADATA[0])
    if not found:
        raise PlatformConfigError(f"youtube-takeout:{root}: no '{METADATA[0]}/{METADATA[1]}' in it")
    if len(found) > 1:
        raise PlatformConfigError(
            f"youtube-takeout:{root}: several {METADATA[1]} ({', '.join(map(str, found[:3]))}):"
            " name one channel's folder"
        )
    return found[0]


def _read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlatformConfigError(f"{path}: cannot read it ({exc})") from None
    reader = csv.DictReader(io.StringIO(text))
    header = {(name or "").strip().lower() for name in reader.fieldnames or []}
    if ID_COLUMN not in header or not header & set(TITLE_COLUMNS):
        raise PlatformConfigError(
            f"{path}: the header has no 'Video ID' and 'Video Title (Original)' columns"
        )
    return [
        (number, {(k or "").strip().lower(): (v or "") for k, v in row.items()})
        for number, row in enumerate(reader, start=2)
    ]


def _cell(row: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = row.get(name)
        if value is not None and value.strip():
            return value if name in DESCRIPTION_COLUMNS else value.strip()
    return None


def _seconds(milliseconds: str | None) -> float | None:
    try:
        return float(milliseconds) / 1000 if milliseconds else None
    except ValueError:
        return None

"""Where inventory rows come from: one source cell's canonical form (a path, s3://, http(s) or a platform
video), and the objects an S3 listing takes."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from videoferry.connectors.path_filter import PathFilter
from videoferry.connectors.sources import SourceError, file_uri_to_path
from videoferry.core.fields import FieldError, parse_string_list
from videoferry.core.item import PLATFORM_SOURCE_RE
from videoferry.core.redact import safe_uri

#: How many skipped keys a listing's summary names.
SKIPPED_EXAMPLES = 5

SCHEME_RE = r"^([A-Za-z][A-Za-z0-9+.\-]*)://"
#: A cell meant as a platform video (checked in full by core.item.PLATFORM_SOURCE_RE).
PLATFORM_PREFIX_RE = r"^(vimeo|wistia|youtube|mux|cloudflare|apivideo|bunny):"
#: What a platform video cell is, as an error says it.
PLATFORM_FORMS = (
    "a platform video is vimeo:<id>, wistia:<hashed_id>, mux:<asset id>, cloudflare:<uid> or"
    " apivideo:<videoId> (letters and digits), or bunny:<library id>/<video guid>"
)


@dataclass(frozen=True)
class SourceBase:
    """What relative local paths in the inventory resolve against: a directory, or an S3 'directory'."""

    local_dir: str | None = None
    s3_bucket: str | None = None
    s3_dir: str = ""


def parse_source(value: str, base: SourceBase) -> tuple[str | None, str | None, str | None, str]:
    """(source, type, error, safe value) of one source cell (the common shapes are done in polars)."""
    safe = safe_uri(value)
    if PLATFORM_SOURCE_RE.match(value):
        return value, "platform", None, safe
    if re.match(PLATFORM_PREFIX_RE, value, re.IGNORECASE):
        return None, None, PLATFORM_FORMS, safe
    match = re.match(SCHEME_RE, value)
    if match:
        scheme, rest = match.group(1).lower(), value[match.end() :]
        if scheme == "s3":
            bucket, _, key = rest.partition("/")
            if not bucket or not key or key.endswith("/"):
                return None, None, "an s3 source must be s3://bucket/key naming one object", safe
            return f"s3://{rest}", "s3", None, safe
        if scheme in ("http", "https"):
            netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
            host = netloc.rpartition("@")[2]
            if not host:
                return None, None, "URL has no host", safe
            if re.search(r"\s", value):
                return None, None, "URL contains whitespace (percent-encode it)", safe
            return value, "url", None, safe
        if scheme == "file":
            try:
                return os.path.normpath(file_uri_to_path(value)), "file", None, safe
            except SourceError as exc:
                return None, None, exc.reason, safe
        return (
            None,
            None,
            f"unknown scheme {scheme!r} (expected a local path, file://, s3:// or http(s)://)",
            safe,
        )
    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return os.path.normpath(path), "file", None, safe
    if base.local_dir is not None:
        return os.path.normpath(os.path.join(base.local_dir, path)), "file", None, safe
    if base.s3_bucket is not None:
        key = posixpath.normpath(posixpath.join(base.s3_dir, path))
        if key in (".", "..") or key.startswith("../") or value.endswith("/"):
            return None, None, "relative path does not name an object in the inventory's bucket", safe
        return f"s3://{base.s3_bucket}/{key}", "s3", None, safe
    return None, None, "relative path with nothing to resolve it against", safe


#: What splits several attachments in one cell when it is not a JSON list (never part of a path we take).
ATTACHMENT_SEPARATOR = "|"


def parse_attachments(text: str, base: SourceBase) -> tuple[str, ...]:
    """An attachments cell: a JSON list of local paths / s3:// URIs, or the same joined by `|` (a path
    holding `|` goes in the JSON form). Relative paths resolve like a source's; a local file must exist.
    Duplicates are dropped, order kept. Raises FieldError naming the item."""
    if text.lstrip().startswith("["):
        items = parse_string_list(text)
    else:
        items = [part.strip() for part in text.split(ATTACHMENT_SEPARATOR)]
    found: list[str] = []
    for i, item in enumerate(items, start=1):
        if not item:
            continue
        source, kind, error, safe = parse_source(item, base)
        if error or source is None:
            raise FieldError(f"item {i} ({safe}): {error or 'unreadable'}")
        if kind == "url":
            raise FieldError(f"item {i} ({safe}): a local path or s3:// is needed (no URL fetch)")
        if kind == "file" and not os.path.isfile(source):
            raise FieldError(f"item {i} ({safe}): no such file")
        if kind == "file" and not os.access(source, os.R_OK):
            raise FieldError(f"item {i} ({safe}): not readable")
        found.append(source)
    if not found:
        raise FieldError("no attachment given (a JSON list or paths joined by |)")
    return tuple(dict.fromkeys(found))


@dataclass
class ListingSkips:
    """What an S3 prefix listing did not take: folder markers, objects a rule excluded, non-video files (no
    rule named them: not_media; a rule included them: refused)."""

    listed: int = 0
    markers: int = 0
    excluded: int = 0
    not_media: int = 0
    refused: int = 0
    #: The first few skipped keys (relative to the prefix), markers left out.
    examples: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        """Objects skipped by a rule or because they are not video files (folder markers not counted)."""
        return self.excluded + self.not_media + self.refused

    def line(self, uri: str) -> str | None:
        """The one line a job prints about what was skipped (None when nothing was)."""
        if not self.skipped:
            return None
        why = []
        if self.not_media:
            why.append(f"{self.not_media} not video files")
        if self.refused:
            why.append(
                f"{self.refused} not video files though --include took them, refused: the service would"
                " make each a video that ends in error and stays (an inventory file can name one to send it"
                " anyway)"
            )
        if self.excluded:
            why.append(f"{self.excluded} left out by --include/--exclude")
        names = ", ".join(self.examples) + (", ..." if self.skipped > len(self.examples) else "")
        total = self.listed - self.markers
        return f"skipped {self.skipped} of {total} objects under {uri}: {'; '.join(why)} ({names})"


def filter_listing(
    objects: Iterable[tuple[str, int]], prefix: str, path_filter: PathFilter
) -> tuple[list[tuple[str, int]], ListingSkips]:
    """(key, size) of the listed objects the filter takes, and what it skipped.

    Rules see each key relative to `prefix` (the listing's root, as rclone sees a remote's root); keys
    ending in "/" (console folder markers) are never objects. Only video files (by extension: is_media) are
    taken, whatever the rules: one a rule included is refused (ListingSkips.refused), before anything is
    created for it (the service makes a video of any file it is sent; one it cannot play stays, in error).
    """
    taken: list[tuple[str, int]] = []
    skips = ListingSkips()
    for key, size in objects:
        skips.listed += 1
        if key.endswith("/"):
            skips.markers += 1
            continue
        relative = key[len(prefix) :] if key.startswith(prefix) else key
        if path_filter.takes(relative):
            taken.append((key, size))
            continue
        verdict = path_filter.verdict(relative)
        if verdict == "excluded":
            skips.excluded += 1
        elif verdict == "included":
            skips.refused += 1
        else:
            skips.not_media += 1
        if len(skips.examples) < SKIPPED_EXAMPLES:
            skips.examples.append(relative)
    return taken, skips

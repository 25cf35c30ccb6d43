"""The item model: what a valid inventory row means, the enums of its life, and the one key formula."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, NamedTuple


class Via(StrEnum):
    """How an item's bytes travel: tus, import by URL, or one single-request upload."""

    TUS = "tus"
    URL = "url"
    SINGLE = "single"


#: The --via option: a Via, or auto (tus for files and S3 objects, url for http(s) sources).
VIA_CHOICES: tuple[str, ...] = ("auto", *(v.value for v in Via))


class SourceKind(StrEnum):
    """Where an item's bytes are: a local file, an S3 object, an http(s) URL, or a video on a platform
    (`vimeo:<id>`, `wistia:<hashed_id>`: its link resolved when its create is due)."""

    FILE = "file"
    S3 = "s3"
    URL = "url"
    PLATFORM = "platform"


class PrivacyType(StrEnum):
    """Who may play a video (spec 2.1 privacy.type)."""

    ANYWHERE = "anywhere"
    NOWHERE = "nowhere"
    CUSTOM = "custom"


class ItemState(StrEnum):
    """Where an item stands in the ledger (state/machine.py holds the transitions)."""

    PLANNED = "planned"
    CREATING = "creating"
    UPLOADING = "uploading"
    UPLOADED = "uploaded"
    PROCESSING = "processing"
    DONE = "done"
    FINISHED = "finished"
    FAILED = "failed"
    ERROR = "error"
    ABORTED = "aborted"


#: States a run leaves alone: the work is complete.
COMPLETE_STATES: frozenset[ItemState] = frozenset({ItemState.DONE, ItemState.FINISHED})


class VideoStatus(StrEnum):
    """The service's processing status of a video (spec 3.1)."""

    PENDING = "pending"
    UPLOADING = "uploading"
    PRE_PROCESSING = "pre-processing"
    PROCESSING = "processing"
    DONE = "done"
    ERROR = "error"
    ABORTED = "aborted"


#: Statuses that end a video's processing.
TERMINAL_STATUSES: frozenset[VideoStatus] = frozenset(
    {VideoStatus.DONE, VideoStatus.ERROR, VideoStatus.ABORTED}
)
#: Statuses of a video whose bytes the service still waits for.
WAITING_FOR_BYTES: frozenset[VideoStatus] = frozenset({VideoStatus.PENDING, VideoStatus.UPLOADING})
#: Statuses that end a video's processing without a playable result.
FAILED_STATUSES: frozenset[VideoStatus] = frozenset({VideoStatus.ERROR, VideoStatus.ABORTED})


class Chapter(NamedTuple):
    """One chapter marker: time in seconds (as the user wrote it) and title."""

    time: float
    title: str


class RowError(ValueError):
    """One rejected input row: its 1-based number, the field, the (short, secret-free) value and why."""

    def __init__(self, row: int | None, field: str, value: str, reason: str) -> None:
        super().__init__(row, field, value, reason)
        self.row = row
        self.field = field
        self.value = value
        self.reason = reason

    def __str__(self) -> str:
        where = f"row {self.row}" if self.row is not None else "row"
        return f"{where}, field {self.field}: {self.reason}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowError) and self.args == other.args

    def __hash__(self) -> int:
        return hash(self.args)


_URL_RE = re.compile(r"^https?://", re.IGNORECASE)
#: A platform video as a source cell: `vimeo:<id>`, `wistia:<hashed_id>`, `mux:<asset id>`,
#: `cloudflare:<uid>`, `apivideo:<videoId>` or `bunny:<library>/<guid>` (the item's key too).
PLATFORM_SOURCE_RE = re.compile(
    r"^(vimeo|wistia|mux|cloudflare|apivideo|bunny):((?<!bunny:)[A-Za-z0-9]+|(?<=bunny:)\d+/[A-Za-z0-9-]+)$"
)


def source_kind(source: str) -> SourceKind:
    """The kind of a normalised source: an http(s) URL, an s3:// object, a platform video, else a file."""
    if _URL_RE.match(source):
        return SourceKind.URL
    if source[:5].lower() == "s3://":
        return SourceKind.S3
    if PLATFORM_SOURCE_RE.match(source):
        return SourceKind.PLATFORM
    return SourceKind.FILE


def derive_key(source: str, parent_id: str) -> str:
    """The default item key, the only place it is computed: sha256(source + "\\n" + parent_id), 32 hex.

    ``source`` and ``parent_id`` are the normalised row values. An http(s) source counts without its query
    string and fragment: presigned S3 links and CDN tokens are signed again between runs, and a rerun with new
    signatures must find the same items. Paths and s3:// sources count exactly as normalised. A platform
    video's key is its own id (`vimeo:<id>`): a rerun finds it whatever its link or folder is now.
    """
    if PLATFORM_SOURCE_RE.match(source):
        return source
    if _URL_RE.match(source):
        source = re.split(r"[?#]", source, maxsplit=1)[0]
    return hashlib.sha256(f"{source}\n{parent_id}".encode()).hexdigest()[:32]


def parse_shard(text: str) -> tuple[int, int]:
    """Parse "K/N" into (K, N) with 1 <= K <= N (ValueError naming the value otherwise)."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        raise ValueError(f"shard {text!r}: expected K/N, e.g. 1/4")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"shard {text!r}: K must be between 1 and N")
    return k, n


def in_shard(key: str, shard: tuple[int, int] | None) -> bool:
    """Whether an item key falls in shard K of N (sha256 of the key, so any key spreads evenly)."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(key.encode()).hexdigest()[:16], 16) % n == k - 1


def choose_via(kind: SourceKind, option: str) -> Via:
    """The path an item of this kind takes under the --via option (auto, tus, url, single).

    Raises ValueError (the reason, for a RowError) when the source cannot travel that way.
    """
    if option not in VIA_CHOICES:
        raise ValueError(f"unknown --via value {option!r} (expected auto, tus, url or single)")
    if kind is SourceKind.URL:
        if option in ("auto", "url"):
            return Via.URL
        raise ValueError(f"an http(s) source can only be imported by URL, not with --via {option}")
    if kind is SourceKind.PLATFORM:
        if option in ("auto", "url"):
            return Via.URL
        if option == "tus":
            return Via.TUS
        raise ValueError("a platform video travels by URL import or tus, not with --via single")
    if option == "url":
        if kind is SourceKind.S3:
            return Via.URL
        raise ValueError("a local file cannot be imported by URL; use --via auto, tus or single")
    return Via.SINGLE if option == "single" else Via.TUS


def default_title(source: str, key: str) -> str:
    """The title of a row without one: the source's file name without extension, query or fragment."""
    name = re.split(r"[?#]", source, maxsplit=1)[0].rstrip("/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return stem or name or key


@dataclass(frozen=True)
class ItemSpec:
    """What an inventory row means once it is valid: validated once, stored as is, read by every step.

    ``source`` may be a signed URL (a capability): kept out of repr. ``title`` is the title the video gets
    (the row's, else the file name's stem). ``via`` is the path chosen for this item (never auto).
    """

    key: str
    source: str = field(repr=False)
    parent_id: str
    via: Via
    title: str
    row: int | None = None
    source_size: int | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    chapters: tuple[Chapter, ...] = ()
    privacy_type: PrivacyType | None = None
    privacy_domains: tuple[str, ...] = ()
    #: Additional materials (local paths, s3:// URIs) attached once the video exists, each once.
    attachments: tuple[str, ...] = ()

    @property
    def source_kind(self) -> SourceKind:
        """Where the bytes are."""
        return source_kind(self.source)

    #: Fields that decide the upload: never changed while a video may exist for the item.
    IDENTITY_FIELDS = ("source", "parent_id", "via")
    #: Fields the finish step can still apply to an existing video.
    METADATA_FIELDS = (
        "source_size",
        "title",
        "description",
        "tags",
        "chapters",
        "privacy_type",
        "privacy_domains",
        "attachments",
    )


def item_spec(
    *,
    key: str,
    source: str,
    parent_id: str,
    via: str,
    title: str,
    row: int | None,
    source_size: int | None,
    description: str | None,
    tags: Iterable[str] | None,
    chapters: Iterable[Mapping[str, Any]] | None,
    privacy_type: str | None,
    privacy_domains: Iterable[str] | None,
    attachments: Iterable[str] | None = None,
) -> ItemSpec:
    """An ItemSpec from plain values (an inventory frame's row, a stored items row, once decoded).

    via and privacy_type by their values (an empty privacy_type: none); tags and privacy domains as
    strings, chapters from {time, title} mappings, attachments as sources; a missing list is empty.
    """
    # Filled in place, not through ItemSpec(...): a frozen dataclass's __init__ sets each of its 13 fields
    # with object.__setattr__, half the cost of a row (this runs once per inventory row and per stored row
    # read). The same instance: that it fills every field of ItemSpec is checked once, below.
    spec = _new(ItemSpec)
    values = spec.__dict__
    values["key"] = key
    values["source"] = source
    values["parent_id"] = parent_id
    values["via"] = _VIAS.get(via) or Via(via)
    values["title"] = title
    values["row"] = row
    values["source_size"] = source_size
    values["description"] = description
    values["tags"] = tuple(map(str, tags)) if tags else ()
    values["chapters"] = (
        tuple(Chapter(float(c["time"]), str(c["title"])) for c in chapters) if chapters else ()
    )
    values["privacy_type"] = PrivacyType(privacy_type) if privacy_type else None
    values["privacy_domains"] = tuple(map(str, privacy_domains)) if privacy_domains else ()
    values["attachments"] = tuple(map(str, attachments)) if attachments else ()
    return spec


_new = object.__new__
#: Via by its value: item_spec() runs once per inventory row, and a dict look-up is cheaper than Via(value).
_VIAS: dict[str, Via] = {via.value: via for via in Via}

# item_spec() fills the instance field by field: a field added to ItemSpec and not filled there fails here.
_filled = item_spec(
    key="",
    source="",
    parent_id="",
    via=next(iter(Via)).value,
    title="",
    row=None,
    source_size=None,
    description=None,
    tags=None,
    chapters=None,
    privacy_type=None,
    privacy_domains=None,
)
if set(vars(_filled)) != {f.name for f in fields(ItemSpec)}:
    raise TypeError(f"item_spec() fills {sorted(vars(_filled))}, not every field of ItemSpec")
del _filled


def owed_update(
    spec: ItemSpec, create_title: str | None, create_description: str | None
) -> dict[str, object]:
    """The update fields a video made from ``spec`` still needs, given what its create sent.

    Nothing is owed before a create: title and description travel with it. After it: the real title when a
    placeholder travelled, the description when it did not travel, and tags and privacy always (the create
    cannot carry them). Chapters are a separate call (see ``owes_metadata``).
    """
    fields: dict[str, object] = {}
    if create_title is not None:
        if spec.title != create_title:
            fields["title"] = spec.title
        if spec.description and spec.description != (create_description or ""):
            fields["description"] = spec.description
    if spec.tags:
        fields["tags"] = list(spec.tags)
    if spec.privacy_type:
        fields["privacy_type"] = spec.privacy_type.value
    if spec.privacy_domains:
        fields["privacy_domains"] = list(spec.privacy_domains)
    return fields


def owes_metadata(spec: ItemSpec, create_title: str | None, create_description: str | None) -> bool:
    """Whether the finish step has anything to apply (an update, chapters or attachments)."""
    return (
        bool(spec.chapters)
        or bool(spec.attachments)
        or bool(owed_update(spec, create_title, create_description))
    )

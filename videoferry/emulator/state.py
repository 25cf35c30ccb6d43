"""In-memory records of the emulator: workspaces, projects, folders, videos and upload sessions."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from videoferry.emulator.media.probe import MediaInfo
from videoferry.emulator.ratelimit import PollClock
from videoferry.emulator.variants import NONE, Variants

#: The spec's poll rule (section 8): at most one GET of a video per 5 s. A workspace's own rule may be set
#: otherwise through the control API (PUT /_emulator/poll-rule); the answers then state it (POLL_RULE_HEADER).
SPEC_POLL_RULE_SECONDS = 5.0
#: Not in the spec: the header the emulator states a poll rule other than the spec's in (emulator/README.md).
POLL_RULE_HEADER = "x-poll-rule-seconds"
#: Not in the spec: every answer of the emulator carries it ("1"): who answers (the real service would not).
EMULATOR_HEADER = b"x-videoferry-emulator"

if TYPE_CHECKING:
    from videoferry.emulator.faults import FaultSet

#: Video statuses (spec 3.1).
STATUSES = ("pending", "uploading", "pre-processing", "processing", "aborted", "done", "error")
#: privacy.type of videos and live events (spec 2.1, 2.8).
PRIVACY_TYPES = ("anywhere", "nowhere", "custom")


@dataclass
class Project:
    """A project: owns videos and folders."""

    id: str
    folders: list[str] = field(default_factory=list)


@dataclass
class Video:
    """One video and everything the API shows about it."""

    id: str
    workspace_id: str
    project_id: str
    folder_id: str | None
    title: str
    seq: int
    created_at: datetime
    short_id: int
    player_id: str
    storage_id: str
    subtitle: str = ""
    description: str = ""
    version: int = 1
    status: str = "pending"
    progress: float = 0.0
    message: str | None = None
    path: Path | None = None  # the stored (complete) file
    file_size: int = 0
    md5: str | None = None
    original_name: str = ""
    stored_at: datetime | None = None
    info: MediaInfo | None = None
    chapters: list[dict[str, Any]] = field(default_factory=list)
    chapters_enabled: bool = False
    privacy_type: str = "anywhere"
    privacy_domains: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    additional_materials: list[dict[str, Any]] = field(default_factory=list)
    additional_materials_enabled: bool = False
    updated_at: datetime | None = None
    generation: int = 0  # bumped whenever processing restarts or is overridden; stale work is dropped
    processing_since: float | None = None  # monotonic time processing started (timed mode progress)
    processing_seconds: float = 0.0
    trim: tuple[float, float | None] | None = None  # X-Video-Trim, applied during processing
    meta: dict[str, str] | None = None  # {event_id, stream_id} of a live recording
    preview: dict[str, Any] | None = None  # init's preview {start, length, quality}: the clip asked for


@dataclass
class UploadSession:
    """A tus resource created by POST /v2/init; its secret path is the permission."""

    id: str
    secret: str
    workspace_id: str
    kind: str  # video | attachment | replace
    video_id: str
    filesize: int | None  # None: not given at init (a plain POST only; tus needs it)
    filename: str | None
    path: Path
    offset: int = 0
    busy: bool = False
    complete: bool = False
    md5: Any = field(default_factory=hashlib.md5)
    opened: float = field(default_factory=time.monotonic)  # when init made it (endpoint-expiry variant)
    preview: dict[str, Any] | None = None  # a replace's preview clip, given to the video when complete


@dataclass
class Workspace:
    """An isolated tenant: its token, limits, processing speed, webhook, faults and objects."""

    id: str
    token: str
    rate_per_second: int
    rate_per_minute: int
    processing: str
    processing_seconds: float
    default_project_id: str
    default_folder_id: str
    projects: dict[str, Project] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)  # folder id -> project id
    videos: dict[str, Video] = field(default_factory=dict)
    sessions: dict[str, UploadSession] = field(default_factory=dict)  # by secret
    webhook_url: str | None = None
    webhook_username: str | None = None
    webhook_password: str | None = None
    faults: FaultSet | None = None
    variants: Variants = NONE  # the service's other choices where the spec is silent (emulator/variants.py)
    extras: dict[str, Any] = field(default_factory=dict)  # per-module state (live_state.py, scopes.py)
    polls: PollClock = field(default_factory=PollClock)  # last GET of each video (poll-rule-429)
    #: Seconds between two GETs of one video the service allows (the spec: 5; set by the control API).
    poll_rule_seconds: float = SPEC_POLL_RULE_SECONDS


def utcnow() -> datetime:
    """Current UTC time."""
    return datetime.now(UTC)


def apply_changes(record: object, changes: dict[str, Any]) -> bool:
    """Set the passed fields that differ on a record; True when something changed."""
    changed = False
    for key, value in changes.items():
        if getattr(record, key) != value:
            setattr(record, key, value)
            changed = True
    return changed

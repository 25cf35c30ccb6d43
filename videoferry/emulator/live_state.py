"""Records of DRM, privacy domains, live events, streams, restreams and code batches."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from videoferry.emulator.errors import rfc3339
from videoferry.emulator.state import Workspace, utcnow


def ts(value: datetime | None) -> str | None:
    """RFC 3339 or None."""
    return rfc3339(value) if value is not None else None


@dataclass
class DrmConfig:
    """The DRM authorisation callback (2.6) of a workspace or one project."""

    url: str
    username: str = ""
    password: str = ""
    strict: bool = False
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None


@dataclass
class Domain:
    """A privacy domain (2.7)."""

    id: str
    domain: str
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None
    archived_at: datetime | None = None


@dataclass
class Stream:
    """One stream of an event (2.10) with what a broadcast left behind (chat, QoS, session)."""

    id: str
    event_id: str
    status: str = "pending"
    started_at: datetime | None = None
    finished_at: datetime | None = None
    chat: list[dict[str, Any]] = field(default_factory=list)
    qos: list[dict[str, Any]] = field(default_factory=list)  # timestamp is a datetime here
    session: dict[str, str] | None = None


@dataclass
class Restream:
    """A restream target (2.9)."""

    id: str
    event_id: str
    name: str
    url: str
    key: str
    description: str = ""
    enabled: bool = True
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None


@dataclass
class Batch:
    """A unique codes batch (2.11) with its codes: code -> (times used, first activation)."""

    id: str
    event_id: str
    name: str
    codes: dict[str, tuple[int, datetime | None]]
    max_count: int | None
    sessions_per_code: int | None
    starts_at: datetime
    expires_at: datetime | None
    seq: int
    created_at: datetime = field(default_factory=utcnow)


@dataclass
class Event:
    """A live event (2.8)."""

    id: str
    workspace_id: str
    parent_id: str
    project_id: str
    name: str
    type: str
    streamkey: str
    seq: int
    settings: dict[str, Any]  # the plain echoed fields (auto_start, chat_*, latency_mode, privacy, ...)
    record_parent_id: str | None = None
    presets: list[str] | None = None
    scheduled_time: datetime | None = None
    streams: list[Stream] = field(default_factory=list)
    restreams: dict[str, Restream] = field(default_factory=dict)
    batches: dict[str, Batch] = field(default_factory=dict)
    poster: dict[str, Any] | None = None
    status: str = "draft"  # draft, enabled, completed
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime | None = None

    @property
    def upcoming(self) -> Stream | None:
        """The next stream to run: the oldest pending one (None when none is scheduled)."""
        return next((s for s in self.streams if s.status == "pending"), None)

    @property
    def last_ran(self) -> Stream | None:
        """The most recent stream that ran (live or finished), None when none did."""
        return next((s for s in reversed(self.streams) if s.status != "pending"), None)

    @property
    def stream(self) -> Stream:
        """The current stream: the live one, else the upcoming one, else the latest."""
        live = next((s for s in self.streams if s.status == "live"), None)
        return live or self.upcoming or self.streams[-1]


@dataclass
class LiveStore:
    """Everything of this module group that belongs to one workspace."""

    drm: dict[str | None, DrmConfig] = field(default_factory=dict)  # None: the workspace's
    domains: dict[str, Domain] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    seq: int = 0

    def next_seq(self) -> int:
        """A growing number (creation order)."""
        self.seq += 1
        return self.seq

    def holds(self, object_id: str) -> bool:
        """Whether an object of this store (event, stream, restream, batch, domain) has this id."""
        if object_id in self.events or object_id in self.domains:
            return True
        return any(
            object_id in event.restreams
            or object_id in event.batches
            or any(stream.id == object_id for stream in event.streams)
            for event in self.events.values()
        )


def store(ws: Workspace) -> LiveStore:
    """The workspace's LiveStore (created on first use)."""
    found = ws.extras.get("live")
    if not isinstance(found, LiveStore):
        found = LiveStore()
        ws.extras["live"] = found
    return found


def resolve_parent(ws: Workspace, parent_id: str) -> tuple[str, str | None] | None:
    """(project_id, folder_id) of a project-or-folder id, None when neither exists."""
    if parent_id in ws.projects:
        return parent_id, None
    if parent_id in ws.folders:
        return ws.folders[parent_id], parent_id
    return None

"""Typed models of DRM auth, privacy domains, live events, restreams, unique codes, QoS, chat (2.6-2.13)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.models import ApiModel, Id, OptionalId, Pagination, Poster, Timestamp

__all__ = [
    "DrmAuth",
    "PrivacyDomain",
    "DomainPage",
    "PrivacyShare",
    "Stream",
    "Restream",
    "RestreamTarget",
    "EventRecord",
    "EventVideo",
    "EventSchedule",
    "LiveEvent",
    "Page",
    "UniqueCodesBatch",
    "UniqueCode",
    "CodesDownload",
    "QOS_STATUS",
    "QosRecord",
    "QosSession",
    "QosReport",
    "ChatMessage",
    "Poster",
]

M = TypeVar("M", bound=BaseModel)

#: QoS record status values (spec 2.12).
QOS_STATUS: dict[int, str] = {
    0: "normal",
    3: "keyframe time difference above 20%",
    4: "keyframe time difference above 50%",
    5: "packet loss",
}


def _loose_id(value: Any) -> Any:
    return try_normal_id(value) if isinstance(value, str) else value


#: An identifier that may also arrive as a number (chat message ids are not shown to be UUIDs).
LooseId = Annotated[str | int | None, BeforeValidator(_loose_id)]


class DrmAuth(ApiModel):
    """The DRM license authorisation callback of a workspace or project (spec 2.6); password hidden."""

    url: str | None = None
    username: str | None = None
    password: str | None = Field(default=None, repr=False)
    strict: bool | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None


class PrivacyDomain(ApiModel):
    """A privacy domain (spec 2.7)."""

    id: Id
    workspace_id: OptionalId = None
    domain: str | None = None
    created_by_user_name: str | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    archived_at: Timestamp = None
    media_count: int | None = None

    @property
    def archived(self) -> bool:
        """True when archived_at is set."""
        return self.archived_at is not None


@dataclass(frozen=True)
class DomainPage:
    """One page of the privacy-domain list: items and its offset/limit meta (spec convention 3)."""

    items: list[PrivacyDomain]
    offset: int | None = None
    limit: int | None = None
    total: int | None = None
    total_count: int | None = None
    order: dict[str, str] = field(default_factory=dict)
    parent_id: str | None = None


@dataclass(frozen=True)
class Page(Generic[M]):
    """One page of a list with meta.pagination and meta.order (spec convention 3)."""

    items: list[M]
    pagination: Pagination = field(default_factory=Pagination)
    order: dict[str, str] = field(default_factory=dict)


class PrivacyShare(ApiModel):
    """privacy_share of an event: password, link_hash and the ready link are secrets (hidden from repr)."""

    password: str | None = Field(default=None, repr=False)
    link_hash: str | None = Field(default=None, repr=False)
    link: str | None = Field(default=None, repr=False)
    sso: bool | None = None


class Stream(ApiModel):
    """A stream of a live event (spec 2.10)."""

    id: Id
    event_id: OptionalId = None
    status: str | None = None
    started_at: Timestamp = None
    finished_at: Timestamp = None

    @property
    def is_pending(self) -> bool:
        """True while the stream is pending (the only state in which its event may be updated)."""
        return self.status == "pending"


class Restream(ApiModel):
    """A restream target (spec 2.9); its stream key is hidden from repr."""

    id: Id
    event_id: OptionalId = None
    name: str | None = None
    url: str | None = None
    key: str | None = Field(default=None, repr=False)
    description: str | None = None
    enabled: bool | None = None
    status: str | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None


@dataclass(frozen=True)
class RestreamTarget:
    """A restream target to send (create, or inside an event body); the key is hidden from repr."""

    name: str
    url: str
    key: str = field(repr=False)
    description: str | None = None
    enabled: bool | None = None

    def payload(self) -> dict[str, Any]:
        """The JSON object of the target (optional fields only when set)."""
        body: dict[str, Any] = {"name": self.name, "url": self.url, "key": self.key}
        if self.description is not None:
            body["description"] = self.description
        if self.enabled is not None:
            body["enabled"] = self.enabled
        return body


class EventRecord(ApiModel):
    """record of an event: where recordings are placed."""

    parent_id: OptionalId = None


class EventVideo(ApiModel):
    """video of an event: the quality presets (an empty list or null seen)."""

    presets: list[str] | None = None


class EventSchedule(ApiModel):
    """scheduled of an event: the broadcast start."""

    time: Timestamp = None


class LiveEvent(ApiModel):
    """A live event (spec 2.8); the stream key and privacy_share secrets are hidden from repr.

    The create answer's reconnect_window, chat_active and video.presets may not echo what was sent (spec
    2.8, known inconsistency): read them back with get when they matter. Get and update answers may leave
    optional fields out.
    """

    id: Id
    workspace_id: OptionalId = None
    parent_id: OptionalId = None
    name: str | None = None
    subtitle: str | None = None
    type: str | None = None
    streamkey: str | None = Field(default=None, repr=False)
    auto_start: bool | None = None
    protected: bool | None = None
    time_shift: bool | None = None
    record: EventRecord | None = None
    video: EventVideo | None = None
    audio: dict[str, Any] | None = None
    restreams: list[Restream] | None = None
    reconnect_window: int | None = None
    play_link: str | None = None
    rtmp_link: str | None = None
    scheduled: EventSchedule | None = None
    stream: Stream | None = None
    chat_after_stream: bool | None = None
    chat_active: bool | None = None
    chat_preview: bool | None = None
    show_members: bool | None = None
    allow_chat_links: bool | None = None
    moderators: list[Any] | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    latency_mode: str | None = None
    privacy_type: str | None = None
    privacy_domains: list[str] | None = None
    privacy_email_domains: list[str] | None = None
    privacy_share: PrivacyShare | None = None
    unique_codes_enabled: bool | None = None
    poster: Poster | None = None

    @property
    def scheduled_time(self) -> datetime | None:
        """scheduled.time, if any."""
        return self.scheduled.time if self.scheduled is not None else None

    @property
    def presets(self) -> list[str] | None:
        """video.presets, if any."""
        return self.video.presets if self.video is not None else None


class UniqueCodesBatch(ApiModel):
    """A batch of unique codes of an event (spec 2.11); max_count or sessions_per_code None: unlimited."""

    id: Id
    entity_id: OptionalId = None
    name: str | None = None
    codes_count: int | None = None
    used_count: int | None = None
    max_count: int | None = None
    sessions_per_code: int | None = None
    starts_at: Timestamp = None
    expires_at: Timestamp = None
    created_at: Timestamp = None

    @property
    def event_id(self) -> str | None:
        """The event of the batch (entity_id)."""
        return self.entity_id


class UniqueCode(ApiModel):
    """One row of a batch's CSV download; the code itself is a secret (hidden from repr)."""

    code: str = Field(repr=False)
    activation_date: str | None = None
    times_used: int | None = None
    usage_limit: int | None = None

    @property
    def activated_at(self) -> datetime | None:
        """The activation date (workspace time zone, ISO 8601); None when unused or unparseable."""
        if not self.activation_date:
            return None
        try:
            return datetime.fromisoformat(self.activation_date.replace("Z", "+00:00"))
        except ValueError:
            return None


class CodesDownload(ApiModel):
    """The CSV download of a batch: the raw text and its rows (both hidden from repr: they hold the codes)."""

    text: str = Field(repr=False)
    columns: list[str] = Field(default_factory=list)
    codes: list[UniqueCode] = Field(default_factory=list, repr=False)

    @property
    def count(self) -> int:
        """How many codes the file lists."""
        return len(self.codes)


class QosRecord(ApiModel):
    """One QoS bucket (spec 2.12)."""

    frame_rate: float | None = None
    bitrate_video: float | None = None
    bitrate_audio: float | None = None
    timestamp: Timestamp = None
    status: int | None = None
    packet_loss: float | None = None

    @property
    def status_text(self) -> str | None:
        """The meaning of status (spec 2.12), "status <n>" for a value the spec does not name."""
        if self.status is None:
            return None
        return QOS_STATUS.get(self.status, f"status {self.status}")


class QosSession(ApiModel):
    """The ingest session of a stream (spec 2.12)."""

    host: str | None = None
    client_ip: str | None = None
    country: str | None = None


class QosReport(ApiModel):
    """The QoS answer: the session (None when none was recorded) and the buckets (empty: no data)."""

    session: QosSession | None = None
    qos: list[QosRecord] = Field(default_factory=list)


class ChatMessage(ApiModel):
    """A chat message (spec 2.13): is_admin arrives as the string "true"/"false" and is read as a bool."""

    id: LooseId = None
    username: str | None = None
    external_id: str | int | None = None
    is_admin: bool | None = None
    message: str | None = None
    created_at: Timestamp = None
    #: The spec's own spelling of the local-time field.
    cteated_at_local: Timestamp = None

    @property
    def created_at_local(self) -> datetime | None:
        """The local-time field, under either spelling (a service may fix the typo)."""
        if self.cteated_at_local is not None:
            return self.cteated_at_local
        fixed = (self.model_extra or {}).get("created_at_local")
        if isinstance(fixed, str) and fixed:
            try:
                return datetime.fromisoformat(fixed.replace("Z", "+00:00"))
            except ValueError:
                return None
        return None

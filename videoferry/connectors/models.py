"""Typed models of the videos and uploads API: missing optional fields tolerated, unknown ones kept."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from videoferry.connectors.ids import try_normal_id
from videoferry.core.item import TERMINAL_STATUSES

__all__ = [
    "ApiModel",
    "TERMINAL_STATUSES",
    "Asset",
    "AudioTrack",
    "Poster",
    "ChapterItem",
    "Chapters",
    "Video",
    "Pagination",
    "VideoPage",
    "UploadSession",
    "UploadResult",
    "Crop",
]

def _blank_to_none(value: Any) -> Any:
    return None if value == "" else value


#: An RFC 3339 timestamp; null, missing or an empty string become None.
Timestamp = Annotated[datetime | None, BeforeValidator(_blank_to_none)]


def _id(value: Any) -> Any:
    return try_normal_id(value) if isinstance(value, str) else value


#: An identifier in the one normal form (dashed lowercase UUID), whatever notation the service answered in.
Id = Annotated[str, BeforeValidator(_id)]
#: The same, optional.
OptionalId = Annotated[str | None, BeforeValidator(_id)]


def _id_values(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {k: _id(v) if k == "id" or str(k).endswith("_id") else v for k, v in value.items()}


#: A free-form object whose `id` / `*_id` values are identifiers (video meta: event_id, stream_id).
IdMap = Annotated[dict[str, Any] | None, BeforeValidator(_id_values)]


class ApiModel(BaseModel):
    """Base of every response model: unknown fields are kept (model_extra), optional ones may be missing."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Asset(ApiModel):
    """A stored rendition of a video (spec 2.2)."""

    id: OptionalId = None
    video_id: OptionalId = None
    original_name: str | None = None
    file_size: int | None = None
    md5: str | None = None
    filetype: str | None = None
    quality: str | None = None
    resolution: str | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    deleted_at: Timestamp = None
    url: str | None = None
    download_link: str | None = None


class AudioTrack(ApiModel):
    """An audio track of a video (spec 2.3)."""

    id: OptionalId = None
    language: str | None = None
    label: str | None = None
    file_size: int | None = None
    filetype: str | None = None
    original_name: str | None = None
    download_link: str | None = None


class Poster(ApiModel):
    """A video poster (spec 2.4)."""

    id: OptionalId = None
    type: str | None = None
    media_id: OptionalId = None
    video_id: OptionalId = None
    storage_id: OptionalId = None
    status: str | None = None
    active: bool | None = None
    original: str | None = None
    md: str | None = None
    sm: str | None = None
    xs: str | None = None
    from_time: float | None = None
    to_time: float | None = None


class ChapterItem(ApiModel):
    """One chapter marker; time is in milliseconds as the service stores it (spec 2.5)."""

    time: int
    title: str = ""

    @property
    def seconds(self) -> float:
        """The marker time in seconds."""
        return self.time / 1000.0


class Chapters(ApiModel):
    """The chapter markers of a video (spec 2.5)."""

    items: list[ChapterItem] = Field(default_factory=list)
    enabled: bool | None = None
    show_on_load: bool | None = None


class Video(ApiModel):
    """A video (spec 2.1); list, get and update responses differ in the optional fields."""

    id: Id
    project_id: OptionalId = None
    folder_id: OptionalId = None
    version: int | float | None = None
    title: str | None = None
    subtitle: str | None = None
    description: str | None = None
    status: str | None = None
    progress: float | None = None
    duration: float | None = None
    assets: list[Asset] | None = None
    has_audio: bool | None = None
    audio_tracks: list[AudioTrack] | None = None
    chapters: Chapters | None = None
    privacy_type: str | None = None
    privacy_domains: list[str] | None = None
    privacy_email_domains: list[str] | None = None
    privacy_share: dict[str, Any] | None = None
    tags: list[str] | None = None
    poster: Poster | None = None
    additional_materials: list[Any] | None = None
    additional_materials_enabled: bool | None = None
    annotation_text_enabled: bool | None = None
    annotation_video_enabled: bool | None = None
    created_at: Timestamp = None
    updated_at: Timestamp = None
    deleted_at: Timestamp = None
    play_link: str | None = None
    embed_link: str | None = None
    hls_link: str | None = None
    subtitles: Any = None
    subtitles_enabled: bool | None = None
    player_id: OptionalId = None
    workspace_id: OptionalId = None
    storage_id: OptionalId = None
    short_id: int | None = None
    chat_preview: bool | None = None
    chat_expand_on_load: bool | None = None
    chat_inside_player: str | None = None
    meta: IdMap = None

    @property
    def is_terminal(self) -> bool:
        """True when the status is done, error or aborted."""
        return self.status in TERMINAL_STATUSES


class Pagination(ApiModel):
    """meta.pagination of a list response."""

    page: int | None = None
    per_page: int | None = None
    total: int | None = None


class VideoPage(ApiModel):
    """One page of the videos list: items plus meta.pagination and meta.order."""

    items: list[Video] = Field(default_factory=list)
    pagination: Pagination = Field(default_factory=Pagination)
    order: dict[str, str] = Field(default_factory=dict)


class UploadSession(ApiModel):
    """Answer of POST /v2/init: the video id and the tus endpoint (a secret capability: hidden from repr)."""

    id: Id
    endpoint: str = Field(repr=False)


class UploadResult(ApiModel):
    """Answer of the single-request upload / URL import, plus which metadata could not travel in headers."""

    id: Id
    project_id: OptionalId = None
    title: str | None = None
    status: str | None = None
    progress: float | None = None
    play_link: str | None = None
    #: Metadata whose real value could not be sent as an ASCII header ("title", "description"): set it with
    #: update_video once the video exists.
    pending_fields: list[str] = Field(default_factory=list)

    @property
    def title_pending(self) -> bool:
        """True when a placeholder title was sent and the real title must be set with update_video."""
        return "title" in self.pending_fields


class Crop(ApiModel):
    """Crop rectangle of the cut operation (width, height, left-top corner, output quality)."""

    w: float
    h: float
    x: float = 0
    y: float = 0
    quality: str | None = None

"""What an archive run works on: the selected live events, their recordings, where each goes (Layout), and the
windows its QoS is read in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from connectors.client import VideoClient
from connectors.client.live_models import LiveEvent
from connectors.config import ConfigError
from connectors.errors import NotFoundError
from connectors.ids import same_id
from connectors.models import Video

__all__ = [
    "EventSelection",
    "UnknownEventError",
    "Recording",
    "select_events",
    "event_recordings",
    "Layout",
    "qos_windows",
    "QOS_BUCKET",
    "stream_lifetime",
    "UNKNOWN_STREAM",
]

#: The service caps one QoS answer at the last 12 hours of its window (spec 4.5, 8): windows stay under it,
#: and start on a bucket boundary so that no 30 s bucket is split between two answers.
QOS_CAP = timedelta(hours=12) - timedelta(minutes=1)
QOS_BUCKET = timedelta(seconds=30)
#: The stream directory of a recording whose meta names no stream (its chat and QoS cannot be read).
UNKNOWN_STREAM = "unknown-stream"
#: Slack around a stream's lifetime when it is estimated from its recording.
LIFETIME_SLACK = timedelta(minutes=5)


class UnknownEventError(ConfigError):
    """A live event given by id that the service does not know (a configuration to fix: exit status 2)."""


@dataclass(frozen=True)
class EventSelection:
    """Which events: the given ids, else every event under a project (parent); finished since a moment."""

    event_ids: Sequence[str] = ()
    project_id: str | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class Recording:
    """One recording (a video) of one stream of one event."""

    event: LiveEvent
    stream_id: str
    video: Video

    @property
    def event_id(self) -> str:
        return self.event.id

    @property
    def video_id(self) -> str:
        return self.video.id


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _may_have_recordings(event: LiveEvent, since: datetime | None) -> bool:
    """Whether the event can have a recording (finished since `since`): a recurring event may have finished
    streams before its current one (pending or live), so it is always listed; a one-time event only once its
    stream finished."""
    if event.type == "recurring":
        return True
    stream = event.stream
    finished = _aware(stream.finished_at) if stream is not None else None
    if finished is None:
        return False
    limit = _aware(since)
    return limit is None or finished >= limit


def select_events(client: VideoClient, selection: EventSelection) -> list[LiveEvent]:
    """The events to archive. Given ids are read one by one; a project is listed (and checked locally)."""
    if selection.event_ids:
        events = []
        for event_id in selection.event_ids:
            try:
                events.append(client.live_events.get(event_id))
            except NotFoundError:
                raise UnknownEventError(f"live event {event_id} does not exist (or is not visible)") from None
        return [e for e in events if _may_have_recordings(e, selection.since)]
    if not selection.project_id:
        raise ValueError("give --event-ids or --project-id")
    listed = client.live_events.iter_events(parent_id=selection.project_id)
    return [  # the parent checked here too, whatever notation the project was given in
        e
        for e in listed
        if same_id(e.parent_id, selection.project_id) and _may_have_recordings(e, selection.since)
    ]


def event_recordings(
    client: VideoClient, event: LiveEvent, since: datetime | None = None
) -> Iterator[Recording]:
    """Every recording of the event (every page) made since `since`; one listed without meta is read once.

    A recording is made when its stream finishes, so its created_at is when the stream finished.
    """
    limit = _aware(since)
    for video in client.live_events.iter_recordings(event.id):
        created = _aware(video.created_at)
        if limit is not None and created is not None and created < limit:
            continue
        meta = video.meta or {}
        if not meta.get("stream_id"):
            video = client.videos.get(video.id)
            meta = video.meta or {}
        if meta.get("event_id") not in (None, event.id):
            continue  # not this event's: the server's filter is checked here
        yield Recording(event=event, stream_id=str(meta.get("stream_id") or UNKNOWN_STREAM), video=video)


@dataclass(frozen=True)
class Layout:
    """Relative paths of the destination (documented in tasks/ARCHIVE.md)."""

    event_id: str
    stream_id: str

    def recording(self, video_id: str, ext: str) -> tuple[str, ...]:
        return (self.event_id, self.stream_id, f"{video_id}.{ext}")

    def sidecar(self, name: str) -> tuple[str, ...]:
        return (self.event_id, self.stream_id, name)

    def manifest(self, name: str) -> tuple[str, ...]:
        return (self.event_id, name)


def stream_lifetime(recording: Recording) -> tuple[datetime, datetime]:
    """The stream's start and end: the event's own stream fields, else estimated from the recording."""
    stream = recording.event.stream
    if stream is not None and stream.id == recording.stream_id:
        start, end = _aware(stream.started_at), _aware(stream.finished_at)
        if start is not None and end is not None:
            return start, end
    video = recording.video
    end = (_aware(video.created_at) or datetime.now(UTC)) + LIFETIME_SLACK
    start = end - timedelta(seconds=float(video.duration or 0)) - 2 * LIFETIME_SLACK
    return start, end


def qos_windows(start: datetime, end: datetime, cap: timedelta = QOS_CAP) -> list[tuple[datetime, datetime]]:
    """Consecutive windows of at most `cap` covering start..end (each answer holds at most 12 hours)."""
    if end <= start:
        return [(start, start + timedelta(seconds=1))]
    windows = []
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    cursor = epoch + ((start - epoch) // QOS_BUCKET) * QOS_BUCKET
    while cursor < end:
        stop = min(cursor + cap, end)
        windows.append((cursor, stop))
        cursor = stop
    return windows

"""Streams of a live event (spec 4.5): scheduling, recordings, QoS statistics and chat logs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from videoferry.connectors.client.live_models import ChatMessage, Page, QosReport, Stream
from videoferry.connectors.client.live_support import (
    as_model,
    as_models,
    data_of,
    read_one,
    read_page,
    rfc3339,
    segment,
)
from videoferry.connectors.client.paging import walk_items
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import ResponseFormatError
from videoferry.connectors.models import Video
from videoferry.connectors.retry import CallKind

__all__ = ["LiveStreams", "CHAT_FORMATS"]

#: Chat log formats, chosen by the path suffix.
CHAT_FORMATS = ("json", "csv", "txt")
_ACCEPT = {"csv": b"text/csv, */*;q=0.5", "txt": b"text/plain, */*;q=0.5"}


def _moment(value: datetime | date | str, *, end: bool) -> str:
    """QoS from/to: a date as YYYY-MM-DD, a datetime as YYYY-MM-DDTHH:MM:SSZ (to: rounded up)."""
    if isinstance(value, datetime):
        aware = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(UTC)
        if end and aware.microsecond:
            aware += timedelta(seconds=1)
        return aware.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _bucket(value: str | timedelta) -> str:
    if isinstance(value, timedelta):
        seconds = math.ceil(value.total_seconds())
        if seconds <= 0:
            raise ValueError("group_time must be positive")
        return f"{seconds}s"
    return value


class LiveStreams:
    """The stream calls of /v2/live/events/:event_id (the base of LiveEvents, which adds the events)."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _event_path(self, event_id: str, suffix: str = "") -> str:
        return f"/v2/live/events/{segment(event_id, 'event_id')}{suffix}"

    # -- streams and recordings -----------------------------------------------------------------------

    def schedule_stream(self, event_id: str, started_at: datetime) -> Stream:
        """POST .../stream {started_at}: schedule a new stream (a create: never repeated when unknown)."""
        body = self._transport.call(
            "POST",
            self._event_path(event_id, "/stream"),
            operation="schedule_stream",
            kind=CallKind.CREATE,
            json_body={"started_at": rfc3339(started_at)},
        )
        return read_one(body, Stream, "schedule_stream")

    def reschedule_stream(self, event_id: str, started_at: datetime) -> Stream:
        """PUT .../stream {started_at}: move the upcoming stream's start. Idempotent."""
        body = self._transport.call(
            "PUT",
            self._event_path(event_id, "/stream"),
            operation="reschedule_stream",
            kind=CallKind.IDEMPOTENT,
            json_body={"started_at": rfc3339(started_at)},
        )
        return read_one(body, Stream, "reschedule_stream")

    def list_recordings(
        self, event_id: str, *, page: int = 1, per_page: int = 100, order: str | None = None
    ) -> Page[Video]:
        """GET .../videos: one page of the event's recordings (by creation time)."""
        params: dict[str, Any] = {"page": page, "per_page": per_page}
        if order is not None:
            params["order"] = order
        body = self._transport.call(
            "GET",
            self._event_path(event_id, "/videos"),
            operation="list_recordings",
            kind=CallKind.IDEMPOTENT,
            params=params,
        )
        return read_page(body, Video, "list_recordings")

    def iter_recordings(
        self, event_id: str, *, order: str | None = None, per_page: int = 100
    ) -> Iterator[Video]:
        """Every recording of the event, page by page, each once."""
        return walk_items(
            lambda n: self.list_recordings(event_id, page=n, per_page=per_page, order=order),
            lambda video: video.id,
            "list_recordings",
        )

    # -- QoS and chat ---------------------------------------------------------------------------------

    def qos(
        self,
        event_id: str,
        *,
        stream_id: str | None = None,
        from_: datetime | date | str | None = None,
        to: datetime | date | str | None = None,
        group_time: str | timedelta | None = None,
    ) -> QosReport:
        """GET .../qos: the session and QoS buckets of the current (or the given) stream.

        The window defaults to the stream's lifetime and is capped at its last 12 hours; group_time is
        "1m", "minute", "hour", "day", "week", "month" or a duration ("30s", "5m"; a timedelta is sent
        in seconds). A stream of another event or workspace: NoSuchEntityError (404404).
        """
        params: dict[str, Any] = {}
        if stream_id is not None:
            params["stream_id"] = stream_id
        if from_ is not None:
            params["from"] = _moment(from_, end=False)
        if to is not None:
            params["to"] = _moment(to, end=True)
        if group_time is not None:
            params["group_time"] = _bucket(group_time)
        body = self._transport.call(
            "GET",
            self._event_path(event_id, "/qos"),
            operation="live_qos",
            kind=CallKind.IDEMPOTENT,
            params=params,
        )
        if not isinstance(body, dict) or not isinstance(body.get("qos", []), list):
            raise ResponseFormatError("answer has no session and qos", operation="live_qos")
        return as_model(QosReport, {"session": body.get("session"), "qos": body.get("qos") or []}, "live_qos")

    def _chat_path(self, event_id: str, stream_id: str, fmt: str) -> str:
        if fmt not in CHAT_FORMATS:
            raise ValueError(f"chat format must be one of {', '.join(CHAT_FORMATS)}")
        return self._event_path(event_id, f"/stream/{segment(stream_id, 'stream_id')}/chat.{fmt}")

    def chat(self, event_id: str, stream_id: str) -> list[ChatMessage]:
        """GET .../stream/:stream_id/chat.json: the stream's chat messages."""
        body = self._transport.call(
            "GET",
            self._chat_path(event_id, stream_id, "json"),
            operation="live_chat",
            kind=CallKind.IDEMPOTENT,
        )
        return as_models(ChatMessage, data_of(body, "live_chat"), "live_chat")

    def chat_body(self, event_id: str, stream_id: str) -> Any:
        """GET .../chat.json: the answer as the service sent it ({data: [...]}, for keeping verbatim)."""
        body = self._transport.call(
            "GET",
            self._chat_path(event_id, stream_id, "json"),
            operation="live_chat",
            kind=CallKind.IDEMPOTENT,
        )
        data_of(body, "live_chat")  # the same shape check as chat()
        return body

    def chat_text(self, event_id: str, stream_id: str, fmt: str = "txt") -> str:
        """GET .../chat.csv or .../chat.txt: the chat log as the service lays it out (layout not shown)."""
        if fmt == "json":
            raise ValueError("use chat() for the JSON log")
        path = self._chat_path(event_id, stream_id, fmt)
        text = self._transport.call(
            "GET",
            path,
            operation=f"live_chat_{fmt}",
            kind=CallKind.IDEMPOTENT,
            headers={"Accept": _ACCEPT[fmt]},
            text=True,
        )
        return str(text or "")

    def chat_csv(self, event_id: str, stream_id: str) -> str:
        """GET .../chat.csv: the chat log as CSV text."""
        return self.chat_text(event_id, stream_id, "csv")

    def chat_txt(self, event_id: str, stream_id: str) -> str:
        """GET .../chat.txt: the chat log as plain text."""
        return self.chat_text(event_id, stream_id, "txt")

"""Live events (spec 4.5, states 3.2): create, list, get, update, delete, enable, complete, move."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

from videoferry.connectors.client.live_models import LiveEvent, Page, RestreamTarget
from videoferry.connectors.client.live_streams import CHAT_FORMATS, LiveStreams
from videoferry.connectors.client.live_support import (
    deleting,
    present,
    read_one,
    read_page,
    redacting,
    rfc3339,
)
from videoferry.connectors.client.paging import walk_items
from videoferry.connectors.errors import (
    AuthError,
    ClientError,
    MethodNotAllowedError,
    NotFoundError,
    ValidationError,
)
from videoferry.connectors.retry import CallKind

__all__ = ["LiveEvents", "EventFields", "PrivacyShareInput", "EventNotPendingError", "CHAT_FORMATS"]

PATH = "/v2/live/events"


class EventNotPendingError(ValidationError):
    """An event update refused because the event's current stream is no longer pending (spec 3.2)."""

    hint = "Events can be updated only while their stream is pending; schedule a new stream first"


class PrivacyShareInput(TypedDict, total=False):
    """privacy_share to send: password (at least 2 characters) or link_hash (6 letters/digits), sso."""

    password: str
    link_hash: str
    sso: bool


class EventFields(TypedDict, total=False):
    """Optional fields of an event's create and update bodies (spec 4.5); None values are not sent."""

    parent_id: str | None
    subtitle: str | None
    auto_start: bool | None
    protected: bool | None
    time_shift: bool | None
    reconnect_window: int | None
    #: Sent as scheduled.time (RFC 3339 UTC; a naive datetime is UTC).
    scheduled_time: datetime | None
    #: Sent as record.parent_id: the project or folder of the recordings.
    record_parent_id: str | None
    #: Sent as video.presets: 360p, 480p, 720p, 1080p, 1440p, 2160p.
    presets: Sequence[str] | None
    #: Update: replaces every target.
    restreams: Sequence[RestreamTarget | Mapping[str, Any]] | None
    latency_mode: str | None
    show_members: bool | None
    chat_active: bool | None
    chat_after_stream: bool | None
    chat_preview: bool | None
    privacy_type: str | None
    privacy_domains: Sequence[str] | None
    privacy_email_domains: Sequence[str] | None
    privacy_share: PrivacyShareInput | Mapping[str, Any] | None
    unique_codes_enabled: bool | None
    #: Any other fields, sent as given.
    extra: Mapping[str, Any] | None


def _body(fields: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The JSON body of a create/update and the secrets it carries (restream keys, share secrets)."""
    body: dict[str, Any] = {}
    secrets: list[str] = []
    for name, value in fields.items():
        if value is None or name == "extra":
            continue
        if name == "scheduled_time":
            body["scheduled"] = {"time": rfc3339(value)}
        elif name == "record_parent_id":
            body["record"] = {"parent_id": value}
        elif name == "presets":
            body["video"] = {"presets": list(value)}
        elif name == "restreams":
            targets = [t.payload() if isinstance(t, RestreamTarget) else dict(t) for t in value]
            secrets += [str(t["key"]) for t in targets if t.get("key")]
            body["restreams"] = targets
        elif name == "privacy_share":
            share = dict(value)
            secrets += [str(share[k]) for k in ("password", "link_hash") if share.get(k)]
            body["privacy_share"] = share
        elif name in ("privacy_domains", "privacy_email_domains"):
            body[name] = list(value)
        else:
            body[name] = value
    body.update(fields.get("extra") or {})
    return body, secrets


class LiveEvents(LiveStreams):
    """/v2/live/events and its sub-resources (restreams and unique codes have their own classes).

    Creates (event, new stream) are never repeated after an unknown outcome (UnknownOutcomeError: look the
    event up with iter_events first). Everything else is idempotent and retried. Secrets sent (restream
    keys, privacy_share password and link_hash) are blanked in the service's error messages; the ones
    answered (streamkey, privacy_share) are hidden from the models' repr.
    """

    def _event(self, method: str, path: str, operation: str, kind: CallKind, **kwargs: Any) -> LiveEvent:
        body = self._transport.call(method, path, operation=operation, kind=kind, **kwargs)
        return read_one(body, LiveEvent, operation)

    # -- events ---------------------------------------------------------------------------------------

    def create(self, name: str, type: str, **fields: Unpack[EventFields]) -> LiveEvent:
        """POST: a new event (in draft) with one pending stream; type is "one-time" or "recurring"."""
        body, secrets = _body({"name": name, "type": type, **fields})
        return self._event(
            "POST", PATH, "create_live_event", CallKind.CREATE, json_body=body, on_error=redacting(secrets)
        )

    def list_events(
        self,
        *,
        page: int = 1,
        per_page: int = 100,
        order: str | None = None,
        parent_id: str | None = None,
        type: str | None = None,
    ) -> Page[LiveEvent]:
        """GET: one page (page from 1), order "<field>.<asc|desc>", filters parent_id and type.

        The spec names no parameters: page, per_page, order, parent_id and type are the videos list's
        conventions.
        """
        params: dict[str, Any] = {"page": page, "per_page": per_page}
        params.update(present({"order": order, "parent_id": parent_id, "type": type}))
        body = self._transport.call(
            "GET", PATH, operation="list_live_events", kind=CallKind.IDEMPOTENT, params=params
        )
        return read_page(body, LiveEvent, "list_live_events")

    def iter_events(
        self,
        *,
        order: str | None = None,
        parent_id: str | None = None,
        type: str | None = None,
        per_page: int = 100,
    ) -> Iterator[LiveEvent]:
        """Every matching event, page by page (one call per page), each once."""
        return walk_items(
            lambda n: self.list_events(
                page=n, per_page=per_page, order=order, parent_id=parent_id, type=type
            ),
            lambda event: event.id,
            "list_live_events",
        )

    def get(self, event_id: str) -> LiveEvent:
        """GET: the event; NotFoundError (400404) when missing."""
        return self._event("GET", self._event_path(event_id), "get_live_event", CallKind.IDEMPOTENT)

    def update(
        self,
        event_id: str,
        *,
        name: str | None = None,
        type: str | None = None,
        **fields: Unpack[EventFields],
    ) -> LiveEvent:
        """PUT: only the given fields change; allowed only while the event's stream is pending.

        A refusal without invalid_params is checked with one GET: when the stream is not pending it is
        raised as EventNotPendingError (the spec does not show that error's body).
        """
        body, secrets = _body({"name": name, "type": type, **fields})
        if not body:
            raise ValueError("the event update needs at least one field")
        path = self._event_path(event_id)
        try:
            return self._event(
                "PUT",
                path,
                "update_live_event",
                CallKind.IDEMPOTENT,
                json_body=body,
                on_error=redacting(secrets),
            )
        except ClientError as exc:
            if exc.invalid_params or isinstance(exc, NotFoundError | AuthError | MethodNotAllowedError):
                raise
            stream = self.get(event_id).stream
            if stream is None or stream.is_pending:
                raise
            refused = EventNotPendingError(
                exc.message,
                status=exc.status,
                code=exc.code,
                detail=exc.detail,
                request_id=exc.request_id,
                operation="update_live_event",
            )
        raise refused

    def delete(self, event_id: str) -> None:
        """DELETE (permanent); a 404 after an unanswered attempt counts as deleted."""
        self._transport.call(
            "DELETE",
            self._event_path(event_id),
            operation="delete_live_event",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_live_event"),
        )

    def _state(self, event_id: str, suffix: str, operation: str) -> LiveEvent:
        body = self._transport.call(
            "PUT", self._event_path(event_id, suffix), operation=operation, kind=CallKind.IDEMPOTENT
        )
        data = body.get("data") if isinstance(body, dict) else None
        if isinstance(data, dict) and data.get("id") and len(data) > 1:
            return read_one(body, LiveEvent, operation)
        return self.get(event_id)  # the spec shows no answer body: read the event

    def enable(self, event_id: str) -> LiveEvent:
        """PUT .../enable: streams can be ingested and played back; the event as it is now."""
        return self._state(event_id, "/enable", "enable_live_event")

    def complete(self, event_id: str) -> LiveEvent:
        """PUT .../complete: the event is completed and ingest stops; the event as it is now."""
        return self._state(event_id, "/complete", "complete_live_event")

    def move(self, event_id: str, parent_id: str) -> LiveEvent:
        """PUT .../move {parent_id}: into another project or folder. Idempotent."""
        return self._event(
            "PUT",
            self._event_path(event_id, "/move"),
            "move_live_event",
            CallKind.IDEMPOTENT,
            json_body={"parent_id": parent_id},
        )

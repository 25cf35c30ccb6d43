"""Restream targets of a live event (spec 4.6): create, list (a plain array), get, update, delete."""

from __future__ import annotations

from typing import Any

from videoferry.connectors.client.live_models import Restream, RestreamTarget
from videoferry.connectors.client.live_support import (
    as_models,
    data_of,
    deleting,
    given_fields,
    read_one,
    redacting,
    segment,
)
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.retry import CallKind

__all__ = ["Restreams", "Restream", "RestreamTarget"]


def _path(event_id: str, restream_id: str | None = None) -> str:
    path = f"/v2/live/events/{segment(event_id, 'event_id')}/restreams"
    return path if restream_id is None else f"{path}/{segment(restream_id, 'restream_id')}"


class Restreams:
    """/v2/live/events/:event_id/restreams: where an event's stream is forwarded.

    The target's key is a secret: hidden from Restream's and RestreamTarget's repr and blanked in any
    error the service answers to a create or update. The list has no pagination (spec convention 2).
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def create(self, event_id: str, target: RestreamTarget) -> Restream:
        """POST: a new target (name, url, key required). A create: never repeated after an unknown outcome."""
        body = self._transport.call(
            "POST",
            _path(event_id),
            operation="create_restream",
            kind=CallKind.CREATE,
            json_body=target.payload(),
            on_error=redacting([target.key, target.url]),
        )
        return read_one(body, Restream, "create_restream")

    def list_restreams(self, event_id: str) -> list[Restream]:
        """GET: every target of the event (`{data: [...]}`, no meta)."""
        body = self._transport.call(
            "GET", _path(event_id), operation="list_restreams", kind=CallKind.IDEMPOTENT
        )
        return as_models(Restream, data_of(body, "list_restreams"), "list_restreams")

    def find(self, event_id: str, name: str) -> list[Restream]:
        """The event's targets of that name (to look one up after an unknown outcome of create)."""
        return [target for target in self.list_restreams(event_id) if target.name == name]

    def get(self, event_id: str, restream_id: str) -> Restream:
        """GET one target; NotFoundError when missing."""
        body = self._transport.call(
            "GET", _path(event_id, restream_id), operation="get_restream", kind=CallKind.IDEMPOTENT
        )
        return read_one(body, Restream, "get_restream")

    def update(
        self,
        event_id: str,
        restream_id: str,
        *,
        name: str | None = None,
        url: str | None = None,
        key: str | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> Restream:
        """PUT: only the given fields are sent. Idempotent."""
        fields: dict[str, Any] = {
            "name": name,
            "url": url,
            "key": key,
            "description": description,
            "enabled": enabled,
        }
        payload = given_fields(fields, "the restream update")
        body = self._transport.call(
            "PUT",
            _path(event_id, restream_id),
            operation="update_restream",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
            on_error=redacting([key, url]),
        )
        return read_one(body, Restream, "update_restream")

    def delete(self, event_id: str, restream_id: str) -> None:
        """DELETE (permanent); a 404 after an unanswered attempt counts as deleted."""
        self._transport.call(
            "DELETE",
            _path(event_id, restream_id),
            operation="delete_restream",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_restream"),
        )

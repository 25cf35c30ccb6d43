"""DRM license authorisation callback (spec 4.3, decision 3.3): for the workspace or one project."""

from __future__ import annotations

from typing import Any

from connectors.client.live_models import DrmAuth
from connectors.client.live_support import deleting, given_fields, read_one, redacting, segment
from connectors.client.transport import Transport
from connectors.errors import NotFoundError
from connectors.retry import CallKind

__all__ = ["Drm", "DrmAuth"]


def _path(project_id: str | None) -> str:
    return "/v1/drm/auth" if project_id is None else f"/v1/drm/auth/{segment(project_id, 'project_id')}"


class Drm:
    """GET, PUT and DELETE /v1/drm/auth (workspace) and /v1/drm/auth/:project_id (one project).

    Every method takes `project_id=None` for the workspace's configuration. The callback's password is a
    secret: hidden from DrmAuth's repr, and blanked in any error the service answers to a PUT.
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def get(self, project_id: str | None = None) -> DrmAuth:
        """GET: the configuration; NotFoundError (400404) when none is configured (or no such project)."""
        body = self._transport.call("GET", _path(project_id), operation="get_drm", kind=CallKind.IDEMPOTENT)
        return read_one(body, DrmAuth, "get_drm")

    def find(self, project_id: str | None = None) -> DrmAuth | None:
        """The configuration, or None when GET answers 404 (not configured, or no such project)."""
        try:
            return self.get(project_id)
        except NotFoundError:
            return None

    def update(
        self,
        project_id: str | None = None,
        *,
        url: str | None = None,
        username: str | None = None,
        password: str | None = None,
        strict: bool | None = None,
        **extra: Any,
    ) -> DrmAuth:
        """PUT: set the callback; only the given (non-None) fields are sent.

        strict=True issues a license only on HTTP 200 from the url; strict=False blocks only on 403
        (spec 3.3). Pass username="" and password="" to stop sending Basic credentials. Idempotent.
        """
        fields: dict[str, Any] = {
            "url": url,
            "username": username,
            "password": password,
            "strict": strict,
            **extra,
        }
        payload = given_fields(fields, "the DRM update")
        body = self._transport.call(
            "PUT",
            _path(project_id),
            operation="update_drm",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
            on_error=redacting([password, username, url]),
        )
        return read_one(body, DrmAuth, "update_drm")

    def delete(self, project_id: str | None = None) -> None:
        """DELETE: remove the configuration (DRM must be configured again before use).

        The workspace owner's token is needed (NotOwnerError, 100107, otherwise). A 404 on a repeated
        attempt after an unanswered one counts as deleted; on the first attempt it raises NotFoundError.
        """
        self._transport.call(
            "DELETE",
            _path(project_id),
            operation="delete_drm",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_drm"),
        )

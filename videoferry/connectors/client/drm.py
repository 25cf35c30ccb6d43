"""DRM license authorisation callback (spec 4.3, decision 3.3): for the workspace or one project."""

from __future__ import annotations

from typing import Any

import httpx

from videoferry.connectors.client.live_models import DrmAuth
from videoferry.connectors.client.live_support import deleting, given_fields, read_one, redacting, segment
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import MethodNotAllowedError, NotFoundError
from videoferry.connectors.retry import CallKind
from videoferry.connectors.tls import tls_context

__all__ = ["Drm", "DrmAuth", "call_callback", "CALLBACK_TIMEOUT"]

#: The service waits this long for the callback's answer (spec 8), then decides as for no answer.
CALLBACK_TIMEOUT = 5.0


def call_callback(url: str, body: dict[str, Any], username: str | None, password: str | None) -> int | None:
    """One POST to a DRM callback as the service sends it (spec 4.3): its HTTP status, None when no answer.

    Basic credentials only when a username is set; one attempt, 5 s, no redirects (spec 3.3, 8).
    """
    auth = httpx.BasicAuth(username, password or "") if username else None
    try:
        with httpx.Client(timeout=CALLBACK_TIMEOUT, follow_redirects=False, verify=tls_context()) as http:
            response = http.post(url, json=body, auth=auth or httpx.USE_CLIENT_DEFAULT)
    except httpx.HTTPError:
        return None
    return response.status_code


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

    def simulate_license(self, video_id: str, project_id: str | None = None) -> dict[str, Any] | None:
        """The emulator's license simulation (POST /_emulator/drm/license): {decision, status, reason}.

        Not part of the service: None, with nothing sent, unless the client knows it talks to the emulator
        (Transport.emulator: the token never goes to a path the real service does not have); None too when the
        host has no such endpoint (404 / 405).
        """
        if not self._transport.emulator:
            return None
        body: dict[str, Any] = {"video_id": video_id}
        if project_id is not None:
            body["project_id"] = project_id
        try:
            answer = self._transport.call(
                "POST",
                "/_emulator/drm/license",
                operation="simulate_drm_license",
                kind=CallKind.IDEMPOTENT,
                json_body=body,
            )
        except (NotFoundError, MethodNotAllowedError):
            return None
        return answer if isinstance(answer, dict) and "decision" in answer else None

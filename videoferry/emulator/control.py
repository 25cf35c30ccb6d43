"""Typed client of the emulator's control API (/_emulator/), for tests, benchmarks and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx

#: The webhook fault kinds (emulator/README.md, "Webhook faults").
WebhookFaultKind = Literal[
    "webhook_lost", "webhook_duplicate", "webhook_out_of_order", "webhook_late", "webhook_forged"
]
#: What a forged webhook falsely claims, and the credentials it carries.
Claim = Literal["done-processing", "done-unknown", "error-done"]
ForgedAuth = Literal["none", "wrong", "configured"]


@dataclass(frozen=True)
class Workspace:
    """An isolated emulator workspace: where to call and with which token."""

    base_url: str
    upload_url: str
    token: str
    workspace_id: str
    project_id: str
    folder_id: str

    def __repr__(self) -> str:
        return f"Workspace(workspace_id={self.workspace_id!r}, base_url={self.base_url!r}, token=***)"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Workspace:
        """Build from the control API's answer."""
        return cls(
            **{
                k: str(data[k])
                for k in ("base_url", "upload_url", "token", "workspace_id", "project_id", "folder_id")
            }
        )

    @property
    def headers(self) -> dict[str, str]:
        """Authorization header for API calls."""
        return {"Authorization": f"Bearer {self.token}"}


class EmulatorControl:
    """Wraps every control endpoint; raises httpx.HTTPStatusError on an error answer."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout)

    def close(self) -> None:
        """Close the HTTP client."""
        self.http.close()

    def __enter__(self) -> EmulatorControl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self,
        method: str,
        path: str,
        ws: Workspace | str | None = None,
        body: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Any:
        headers = {}
        if ws is not None:
            token = ws.token if isinstance(ws, Workspace) else ws
            headers["Authorization"] = f"Bearer {token}"
        response = self.http.request(method, path, headers=headers, json=body, params=params)
        response.raise_for_status()
        return response.json()

    def create_workspace(
        self,
        *,
        rate_per_second: int | None = None,
        rate_per_minute: int | None = None,
        processing: str | None = None,
        processing_seconds: float | None = None,
        poll_rule_seconds: float | None = None,
        variants: Sequence[str] | None = None,
        **variant_params: float,
    ) -> Workspace:
        """A new isolated workspace with one project and folder (and these variants, if given); its poll rule
        (the spec's 5 s unless given: set_poll_rule)."""
        body: dict[str, Any] = {
            k: v
            for k, v in {
                "rate_per_second": rate_per_second,
                "rate_per_minute": rate_per_minute,
                "processing": processing,
                "processing_seconds": processing_seconds,
                "poll_rule_seconds": poll_rule_seconds,
            }.items()
            if v is not None
        }
        if variants is not None:
            body.update(variants=list(variants), **variant_params)
        return Workspace.from_dict(self._call("POST", "/_emulator/workspaces", body=body))

    def set_variants(self, ws: Workspace | str, variants: Sequence[str], **params: float) -> dict[str, Any]:
        """Switch the workspace to these variants (replacing the ones before); params as in the README."""
        answer = self._call("PUT", "/_emulator/variants", ws, body={"variants": list(variants), **params})
        return dict(answer)

    def variants(self) -> dict[str, str]:
        """Every variant the emulator knows: name -> what it changes."""
        return dict(self._call("GET", "/_emulator/variants")["data"])

    def create_project(self, ws: Workspace | str) -> tuple[str, str]:
        """A new project with one folder: (project_id, folder_id)."""
        data = self._call("POST", "/_emulator/projects", ws)
        return str(data["project_id"]), str(data["folder_id"])

    def set_faults(self, ws: Workspace | str, rules: list[dict[str, Any]], *, seed: int = 0) -> None:
        """Replace the workspace's fault rules (emulator/README.md); webhook_fault() builds webhook ones."""
        self._call("PUT", "/_emulator/faults", ws, {"seed": seed, "rules": rules})

    @staticmethod
    def webhook_fault(
        kind: WebhookFaultKind,
        rate: float = 1.0,
        *,
        times: int | None = None,
        video_status: str | None = None,
        ms: float | None = None,
        claim: Claim | None = None,
        auth: ForgedAuth | None = None,
    ) -> dict[str, Any]:
        """A fault rule of media.update.status deliveries, for set_faults.

        `video_status`: only deliveries of that status; `ms`: the delay of webhook_late, the longest hold of
        webhook_out_of_order (default 3000); webhook_forged sends, besides the delivery, a webhook making
        `claim` with `auth` credentials (each drawn when not given).
        """
        rule: dict[str, Any] = {"kind": kind, "rate": rate}
        optional = {"times": times, "video_status": video_status, "ms": ms, "claim": claim, "auth": auth}
        rule.update({k: v for k, v in optional.items() if v is not None})
        return rule

    def forge_webhook(
        self,
        ws: Workspace | str,
        claim: Claim = "done-unknown",
        *,
        video_id: str | None = None,
        auth: ForgedAuth = "none",
    ) -> dict[str, Any]:
        """Send one webhook the service never emitted to the registered URL, now.

        Answers {claim, video_id, auth, status}: the video it named and the receiver's HTTP status (None: no
        answer). Without video_id the claim picks it: done-processing the oldest video not done yet,
        error-done the oldest done one (400400 when there is none), done-unknown a fresh id.
        """
        body: dict[str, Any] = {"claim": claim, "auth": auth}
        if video_id is not None:
            body["video_id"] = video_id
        return dict(self._call("POST", "/_emulator/webhook/forge", ws, body))

    def clear_faults(self, ws: Workspace | str) -> None:
        """Remove every fault rule."""
        self._call("DELETE", "/_emulator/faults", ws)

    def set_poll_rule(self, ws: Workspace | str, seconds: float) -> None:
        """The workspace's poll rule: one GET of a video per `seconds` (the spec's is 5). Answers state one
        other than the spec's in X-Poll-Rule-Seconds, and the client follows it: the only way a test makes a
        run poll faster than the spec allows (no user option goes below 5 s)."""
        self._call("PUT", "/_emulator/poll-rule", ws, {"seconds": seconds})

    def set_processing(self, ws: Workspace | str, mode: str, seconds: float | None = None) -> None:
        """Processing speed: immediate, manual or timed (seconds per video)."""
        body: dict[str, Any] = {"mode": mode}
        if seconds is not None:
            body["seconds"] = seconds
        self._call("PUT", "/_emulator/processing", ws, body)

    def set_video_status(
        self, ws: Workspace | str, video_id: str, status: str, message: str | None = None
    ) -> dict[str, Any]:
        """Force a video's status (manual processing); returns the video."""
        body: dict[str, Any] = {"status": status}
        if message is not None:
            body["message"] = message
        return dict(self._call("POST", f"/_emulator/videos/{video_id}/status", ws, body)["data"])

    def set_webhook(
        self,
        ws: Workspace | str,
        url: str | None,
        *,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        """Where media.update.status webhooks go (None stops them)."""
        self._call("PUT", "/_emulator/webhook", ws, {"url": url, "username": username, "password": password})

    def set_limits(
        self, ws: Workspace | str, *, rate_per_second: int | None = None, rate_per_minute: int | None = None
    ) -> None:
        """Change the workspace's rate limits (0 disables a window)."""
        body = {
            k: v
            for k, v in {"rate_per_second": rate_per_second, "rate_per_minute": rate_per_minute}.items()
            if v is not None
        }
        self._call("PUT", "/_emulator/limits", ws, body)

    def requests(
        self, workspace_id: str | None = None, *, since: float | None = None, open_now: bool = False
    ) -> list[dict[str, Any]]:
        """The request log, oldest first (`open_now`: the requests received and not answered yet)."""
        params: dict[str, Any] = {"open": "true"} if open_now else {}
        if workspace_id is not None:
            params["workspace_id"] = workspace_id
        if since is not None:
            params["since"] = since
        return list(self._call("GET", "/_emulator/requests", params=params)["data"])

    def videos(self, ws: Workspace | str) -> list[dict[str, Any]]:
        """Every video of the workspace (with file_size of the stored bytes)."""
        return list(self._call("GET", "/_emulator/videos", ws)["data"])

    def broadcast(
        self,
        ws: Workspace | str,
        event_id: str,
        *,
        seconds: float = 10,
        chat_messages: int = 0,
        qos: bool = True,
        stream_seconds: float | None = None,
    ) -> dict[str, str]:
        """Run one finished stream of an enabled live event: {stream_id, video_id} (the recording processed).

        stream_seconds: the stream's length as its timestamps, chat and QoS tell (default: seconds; up to 7
        days, simulated in the past); the recording stays a clip of `seconds`.
        """
        body: dict[str, Any] = {"seconds": seconds, "chat_messages": chat_messages, "qos": qos}
        if stream_seconds is not None:
            body["stream_seconds"] = stream_seconds
        return dict(self._call("POST", f"/_emulator/live/events/{event_id}/broadcast", ws, body))

    def drm_license(self, ws: Workspace | str, video_id: str, **fields: str) -> dict[str, Any]:
        """A DRM license request (project_id?, ip?, user_agent?): {decision, status, reason}."""
        return dict(self._call("POST", "/_emulator/drm/license", ws, {"video_id": video_id, **fields}))

    def create_token(
        self,
        ws: Workspace | str,
        *,
        project_ids: Sequence[str] | None = None,
        owner: bool = True,
        read_only: bool = False,
    ) -> str:
        """Another token of the workspace, limited to some projects, to reading, and/or not the owner's."""
        body: dict[str, Any] = {"owner": owner, "read_only": read_only}
        if project_ids is not None:
            body["project_ids"] = list(project_ids)
        return str(self._call("POST", "/_emulator/tokens", ws, body)["token"])

    def reset(self) -> None:
        """Forget everything; the default workspace comes back empty with the same keys."""
        self._call("POST", "/_emulator/reset")

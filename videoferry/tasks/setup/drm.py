"""Checking the DRM authorisation callback: the decision of spec 3.3, simulated or asked of the url."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from videoferry.connectors.client.drm import call_callback
from videoferry.connectors.desired_state import DrmSpec

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient

#: The body of a test license request (spec 4.3: id, ip, type, token, user_agent); the token is a dummy.
TEST_TYPE = "videoferry-check"


def decide(strict: bool, status: int | None) -> str:
    """The table of 3.3: issued / denied / not_blocked; status None is no answer within 5 s or unreachable."""
    if strict:
        return "issued" if status == 200 else "denied"
    return "denied" if status == 403 else "not_blocked"


@dataclass(frozen=True)
class DrmCheck:
    """One check's answer: where the decision came from, the callback's status and the decision."""

    scope: str  #: workspace or project <id>
    source: str  #: "service simulation" or "callback called"
    strict: bool | None
    status: int | None
    decision: str
    reason: str = ""

    def line(self) -> str:
        """How the check is shown (never the url's credentials)."""
        status = "no answer" if self.status is None else f"HTTP {self.status}"
        strict = "-" if self.strict is None else str(self.strict).lower()
        head = f"drm {self.scope}: strict={strict}, callback {status}"
        return f"{head} -> {self.decision} ({self.source}){self.reason}"


def check_drm(
    client: VideoClient,
    *,
    project_id: str | None = None,
    video_id: str | None = None,
    desired: DrmSpec | None = None,
) -> DrmCheck | None:
    """The decision a license request would get now; None when no DRM callback is configured.

    With a video id the service's license simulation is asked first (the emulator has one); otherwise, or
    when the host has none, the configured url is called once with a test body and the table applied.
    """
    scope = "workspace" if project_id is None else f"project {project_id}"
    config = client.drm.find(project_id)
    if video_id is not None:
        simulated = client.drm.simulate_license(video_id, project_id)
        if simulated is not None:
            strict = config.strict if config is not None else None
            status = simulated.get("status")
            reason = f": {simulated['reason']}" if simulated.get("reason") else ""
            return DrmCheck(scope, "service simulation", strict, status, str(simulated["decision"]), reason)
    if config is None or not config.url:
        return None
    username = config.username or (desired.username if desired else None)
    password = config.password or (desired.password if desired else None)
    body = {
        "id": video_id or "videoferry-drm-check",
        "ip": "127.0.0.1",
        "type": TEST_TYPE,
        "token": "videoferry-drm-check",
        "user_agent": "videoferry drm check",
    }
    status = call_callback(config.url, body, username or None, password)
    strict = bool(config.strict)
    return DrmCheck(scope, "callback called", strict, status, decide(strict, status))

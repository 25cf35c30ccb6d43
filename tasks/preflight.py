"""The preflight checks: the service's addresses answer at all (no token sent), and one cheap list call
that stops a run with a bad token before any item is touched."""

from __future__ import annotations

import hashlib
import threading
import time

from connectors.client import VideoClient
from connectors.client.probe import probe_service
from connectors.config import Settings

#: A check this recent (seconds) by this process for the same service and token stands for the run's own.
RECENT_SECONDS = 60.0

_passed: dict[str, float] = {}
_reached: dict[tuple[str, str], float] = {}
_lock = threading.Lock()


def check_reachable(settings: Settings) -> None:
    """Both addresses of the service answer HTTP (connectors/client/probe.py: one GET each, no token, a few
    seconds at most); ServiceUnreachableError (a ConfigError, exit status 2) names the URL and the variable
    to fix. A pass by this process within RECENT_SECONDS for the same addresses stands for a new check (the
    command line checks before a Prefect flow starts; the flow's run checks again, for deployments)."""
    addresses = (settings.api_url, settings.upload_url)
    with _lock:
        at = _reached.get(addresses)
    if at is not None and time.monotonic() - at < RECENT_SECONDS:
        return
    probe_service(settings)
    with _lock:
        _reached[addresses] = time.monotonic()


def _key(api_url: str, token: str) -> str:
    # Only a digest of the token is kept (secrets never sit in plain module state that could be dumped).
    return hashlib.sha256(f"{api_url}\n{token}".encode()).hexdigest()


def read_one(client: VideoClient) -> None:
    """The preflight read: list one video; AuthError (and any other VideoApiError) propagates."""
    client.videos.list(page=1, per_page=1)


def check_service(client: VideoClient, settings: Settings) -> None:
    """read_one(); a pass is remembered for checked_recently() (the CLI's check while Prefect starts)."""
    read_one(client)
    with _lock:
        _passed[_key(settings.api_url, settings.token)] = time.monotonic()


def checked_recently(settings: Settings) -> bool:
    """Whether this process passed the check for this service and token within RECENT_SECONDS."""
    with _lock:
        at = _passed.get(_key(settings.api_url, settings.token))
    return at is not None and time.monotonic() - at < RECENT_SECONDS

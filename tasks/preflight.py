"""The preflight read: one cheap list call that stops a run with a bad token before any item is touched."""

from __future__ import annotations

import hashlib
import threading
import time

from connectors.client import VideoClient
from connectors.config import Settings

#: A check this recent (seconds) by this process for the same service and token stands for the run's own.
RECENT_SECONDS = 60.0

_passed: dict[str, float] = {}
_lock = threading.Lock()


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

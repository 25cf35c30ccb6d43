"""Bounded polling for the connector tests: until a condition holds, or a video reaches a terminal status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from connectors.client import VideoClient
from connectors.models import Video

T = TypeVar("T")


def poll(check: Callable[[], T], timeout: float, what: str) -> T:
    """Call check() until it returns something true (returned); fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g} s for {what}")
        time.sleep(0.05)


def wait_terminal(client: VideoClient, video_id: str, timeout: float = 30.0) -> Video:
    """Poll the video until done, error or aborted; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        video = client.videos.get(video_id)
        if video.is_terminal:
            return video
        if time.monotonic() > deadline:
            raise AssertionError(f"video still {video.status}")
        time.sleep(0.2)

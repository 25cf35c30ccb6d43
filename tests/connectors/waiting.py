"""Bounded polling for the connector tests: until a condition holds, or a video reaches a terminal status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from videoferry.connectors.client import VideoClient
from videoferry.connectors.ids import same_id
from videoferry.connectors.models import Video

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
    """Poll the video's status until done, error or aborted, then read it once; fail after `timeout` seconds.

    The status is polled by listing (the spec's poll rule binds GETs of one video: the client paces them 5 s
    apart, connectors/client/videos.py), so a test waits only as long as processing takes.
    """
    deadline = time.monotonic() + timeout
    while True:
        listed = client.videos.iter(order="created_at.desc")
        status = next((v.status for v in listed if same_id(v.id, video_id)), None)
        if status in TERMINAL:
            return client.videos.get(video_id)
        if time.monotonic() > deadline:
            raise AssertionError(f"video still {status}")
        time.sleep(0.2)


#: The statuses a video ends in.
TERMINAL = ("done", "error", "aborted")

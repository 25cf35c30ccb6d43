"""Bounded polling for the connector tests: wait until a video reaches a terminal status."""

from __future__ import annotations

import time

from connectors.client import VideoClient
from connectors.models import Video


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

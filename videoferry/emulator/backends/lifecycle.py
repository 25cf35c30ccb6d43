"""The lifecycle backend: the status changes driven by the processor and by the control API."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from videoferry.emulator.backends.base import Backend
from videoferry.emulator.media.probe import MediaInfo
from videoferry.emulator.state import Video, Workspace


class LifecycleBackend(Backend):
    """Processing steps of a stored file (stale work is ignored) and statuses set by hand."""

    def processing_input(self, ws: Workspace, video_id: str, generation: int) -> tuple[Path, Any] | None:
        """The stored file and pending trim of a video, or None when the work is stale."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None or video.path is None:
                return None
            return video.path, video.trim

    def processing_trimmed(self, ws: Workspace, video_id: str, generation: int, dst: Path, md5: str) -> bool:
        """Swap in the file produced by an upload's X-Video-Trim."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None:
                dst.unlink(missing_ok=True)
                return False
            old = video.path
            name = video.original_name
            self.store_file(video, dst, dst.stat().st_size, md5, name)
            video.trim = None
            self.release(ws, old)
            return True

    def processing_started(
        self, ws: Workspace, video_id: str, generation: int, info: MediaInfo
    ) -> tuple[str, float] | None:
        """Record the probe result and enter processing: (mode, seconds) of the workspace, None when stale."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None:
                return None
            video.info = info
            mode = ws.processing
            video.processing_seconds = ws.processing_seconds
            # processing-queue: progress stays 0 while it waits its turn (processing_turn starts the clock)
            video.processing_since = None if ws.variants.has("processing-queue") else time.monotonic()
            video.progress = 100.0 if mode == "manual" else 0.0
            self.core.set_status(ws, video, "processing")
            return mode, video.processing_seconds

    def processing_turn(self, ws: Workspace, video_id: str, generation: int, seconds: float) -> bool:
        """processing-queue: the video's turn came; its processing (and progress) runs from now for seconds.
        False when stale (deleted or replaced while it waited: nothing to process)."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None:
                return False
            video.processing_seconds = seconds
            video.processing_since = time.monotonic()
            return True

    def processing_finished(
        self, ws: Workspace, video_id: str, generation: int, status: str, message: str | None = None
    ) -> None:
        """End processing with done or error (ignored when stale)."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None:
                return
            video.processing_since = None
            self.core.set_status(ws, video, status, message)

    def force_status(self, ws: Workspace, video_id: str, status: str, message: str | None) -> Video:
        """Control API: set a status by hand (pending processing work is dropped)."""
        with self.lock:
            video = self.video(ws, video_id)
            video.generation += 1
            video.processing_since = None
            if status == "error" and message is None:
                message = "set by the emulator control API"
            self.core.set_status(ws, video, status, message)
            return video

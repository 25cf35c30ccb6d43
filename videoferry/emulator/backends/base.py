"""What every backend shares: the core it works on and the video helpers (lookup, new, store, process)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from videoferry.emulator.errors import folder_missing, not_found
from videoferry.emulator.ids import new_id
from videoferry.emulator.media.probe import MediaInfo
from videoferry.emulator.refusals import admit_video
from videoferry.emulator.state import Video, Workspace, utcnow

if TYPE_CHECKING:
    from videoferry.emulator.backends.core import Emulator


class Backend:
    """One group of operations on the core's state; every public method of a subclass is one operation."""

    def __init__(self, core: Emulator) -> None:
        self.core = core
        self.lock = core.lock

    def video(self, ws: Workspace, video_id: str) -> Video:
        """A video of the workspace (404 / 400404 when missing)."""
        video = ws.videos.get(video_id)
        if video is None:
            raise not_found("video")
        return video

    def current(self, ws: Workspace, video_id: str, generation: int) -> Video | None:
        """The video when it still exists at that generation (None: the work is stale)."""
        video = ws.videos.get(video_id)
        if video is None or video.generation != generation:
            return None
        return video

    def parent(self, ws: Workspace, parent_id: str, name: str) -> tuple[str, str | None]:
        """Resolve a project-or-folder id to (project_id, folder_id); 400236 when neither exists."""
        if parent_id in ws.projects:
            return parent_id, None
        if parent_id in ws.folders:
            return ws.folders[parent_id], parent_id
        raise folder_missing(name)

    def release(self, ws: Workspace, path: Path | None) -> None:
        """Delete a stored file once no video of the workspace refers to it."""
        if path is None:
            return
        if any(v.path == path for v in ws.videos.values()):
            return
        path.unlink(missing_ok=True)

    def new_video(
        self, ws: Workspace, project_id: str, folder_id: str | None, title: str, *, admit: bool = True
    ) -> Video:
        """A new video record in status pending (the title in the form the workspace's service keeps); first
        admitted by the workspace's quota and billing state (emulator/refusals.py) unless admit is False (a
        broadcast's recording, which no request of the client made)."""
        if admit:
            admit_video(ws)
        seq = next(self.core.seq)
        video = Video(
            id=new_id(),
            workspace_id=ws.id,
            project_id=project_id,
            folder_id=folder_id,
            title=ws.variants.stored_title(title),
            seq=seq,
            created_at=utcnow(),
            short_id=100000 + seq,
            player_id=new_id(),
            storage_id=new_id(),
        )
        ws.videos[video.id] = video
        return video

    def touch(self, video: Video) -> None:
        """Mark a video as updated now."""
        video.updated_at = utcnow()

    def start_processing(self, ws: Workspace, video: Video, info: MediaInfo | None = None) -> None:
        """Enter pre-processing and hand the stored file to the processor."""
        video.generation += 1
        video.progress = 0.0
        video.processing_since = None
        self.core.set_status(ws, video, "pre-processing")
        if self.core.on_process is not None:
            self.core.on_process(ws, video.id, video.generation, info)

    def store_file(self, video: Video, path: Path, size: int, md5: str | None, name: str | None) -> None:
        """Make a file the video's stored bytes (the probe result is cleared)."""
        video.path = path
        video.file_size = size
        video.md5 = md5
        video.original_name = name or video.original_name or video.title
        video.stored_at = utcnow()
        video.info = None

"""Operations that exist only under a variant (cut making a new video), kept apart from the videos backend."""

from __future__ import annotations

from pathlib import Path

from videoferry.emulator.backends.core import Emulator
from videoferry.emulator.backends.videos import CutPlan
from videoferry.emulator.errors import ApiError, not_found, video_changed
from videoferry.emulator.media.probe import MediaInfo
from videoferry.emulator.state import Video, Workspace


def commit_cut_new(
    emu: Emulator, ws: Workspace, source_id: str, plan: CutPlan, dst: Path, info: MediaInfo, md5: str
) -> Video:
    """cut-new-video: a new video (new id, version 1) holds the cut's result; the source stays as it was.

    The new video lands where the cut's project_id / folder_id say, else beside the source; its title is
    the cut's, else the source's. It is then processed like any cut result.
    """
    with emu.lock:
        src = ws.videos.get(source_id)
        if src is None or src.version != plan.version:
            dst.unlink(missing_ok=True)
            if src is None:
                raise not_found("video")
            raise video_changed()
        try:
            copy = emu.videos.copy_video(ws, source_id, None)
        except ApiError:  # refused by the workspace's quota or billing state: the cut's file goes
            dst.unlink(missing_ok=True)
            raise
        video = emu.videos.commit_cut(ws, copy.id, plan, dst, info, md5)
        video.version = 1
        video.updated_at = None
        return video

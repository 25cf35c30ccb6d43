"""What a backup run works on: every video of the project (or folder), and what each needs: to be read and
backed up, or nothing since the last backup."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from connectors.client import VideoClient
from connectors.ids import same_id
from connectors.models import Video
from tasks.backup.held import Held
from tasks.backup.metadata import listing_mark

__all__ = ["Decision", "VideoSelection", "decide", "in_selection", "list_videos"]


@dataclass(frozen=True)
class VideoSelection:
    """Which videos: every one of a project, or of one folder of it; with since, only those made or changed
    since then are read (the others keep what the backup holds)."""

    project_id: str
    folder_id: str | None = None
    since: datetime | None = None


@dataclass(frozen=True)
class Decision:
    """What a listed video needs: read (and back up what changed), or a state and why not."""

    read: bool
    state: str = ""
    reason: str = ""


def list_videos(client: VideoClient, selection: VideoSelection) -> list[Video]:
    """Every video of the selection: every page of the list (newest first), the project and folder checked
    here too (a service may ignore a filter, cap pages, leave out the total, answer ids in any notation).

    One page that keeps failing fails the whole listing: a partial listing must never make the backup think
    videos were deleted.
    """
    return list(client.videos.scan(project_id=selection.project_id, folder_id=selection.folder_id))


def in_selection(video: Video, selection: VideoSelection) -> bool:
    """Whether a video (read with GET) is in the selection: its project, and its folder when one is given."""
    if video.deleted_at is not None or not same_id(video.project_id or "", selection.project_id):
        return False
    return selection.folder_id is None or same_id(video.folder_id or "", selection.folder_id)


def _aware(moment: datetime | None) -> datetime | None:
    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def decide(video: Video, held: Held | None, since: datetime | None) -> Decision:
    """Whether a listed video must be read: when it is new to the backup, when what its listing shows
    (updated_at, version, its assets' sizes and md5, title, chapters, ...) moved since the last backup, when a
    step failed then, or when it comes back after it was marked gone. Otherwise the backup has it as it is."""
    if video.status != "done":
        bad = video.status in ("error", "aborted")
        return Decision(False, "skipped" if bad else "pending", f"the video is {video.status} in the service")
    copied = held.copied if held is not None else None
    limit = _aware(since)
    if limit is not None:
        moments = [m for m in (_aware(video.created_at), _aware(video.updated_at)) if m is not None]
        if moments and max(moments) < limit:
            if copied is None:
                return Decision(False, "skipped", "made and last changed before --since")
            return Decision(False, "unchanged", "not read: last changed before --since")
    if held is None or copied is None:
        return Decision(True, reason="new to the backup")
    if held.gone is not None:
        return Decision(True, reason="listed again after it was marked gone")
    metadata = held.result("metadata")
    if metadata is None or metadata.get("listing") != listing_mark(video):
        return Decision(True, reason="changed since the last backup (or a step failed then)")
    return Decision(False, "unchanged")

"""The videos backend (4.1): list, get, update, delete, copy, move, chapters, cut and concat."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

from emulator.backends.base import Backend
from emulator.errors import (
    ApiError,
    Invalid,
    folder_missing,
    not_exists,
    not_found,
    not_ready,
    validation,
    video_changed,
)
from emulator.listing import by_update, page_rows
from emulator.media.probe import MediaInfo
from emulator.refusals import admit_change
from emulator.state import Video, Workspace, apply_changes

SORTABLE = ("created_at", "updated_at", "title", "duration")
#: The default order's key (creation, then the order of arrival): one C call per video, not a lambda's tuple.
_BY_CREATION = attrgetter("created_at", "seq")


@dataclass(frozen=True)
class CutPlan:
    """A validated cut: the source file, the media operation and the metadata to write with it."""

    src: Path
    trim: tuple[tuple[float, float | None], ...]
    crop: tuple[int, int, int, int] | None
    version: int
    project_id: str | None
    folder_id: str | None
    title: str | None
    description: str | None


class VideosBackend(Backend):
    """The operations of /v1/videos."""

    def list_videos(
        self,
        ws: Workspace,
        *,
        page: int,
        per_page: int,
        order_field: str,
        order_dir: str,
        project_id: str | None,
        folder_id: str | None,
        title: str | None,
        created_before: datetime | None = None,
        projects: frozenset[str] | None = None,
    ) -> tuple[list[Video], int]:
        """One page of the workspace's videos after filters and ordering, and the total.

        `projects` limits the list to the projects a scoped token reaches (None: every one).
        """
        with self.lock:
            rows = [
                v
                for v in ws.videos.values()
                if (project_id is None or v.project_id == project_id)
                and (folder_id is None or v.folder_id == folder_id)
                and (title is None or v.title == title)
                and (created_before is None or v.created_at <= created_before)
                and (projects is None or v.project_id in projects)
            ]
        if order_field == "title":
            rows.sort(key=lambda v: (v.title, v.seq))
        elif order_field == "duration":
            rows.sort(key=lambda v: (v.info.duration if v.info else 0.0, v.seq))
        elif order_field == "updated_at":
            rows.sort(key=lambda v: (*by_update(v), v.seq))
        else:
            rows.sort(key=_BY_CREATION)
        if order_dir == "desc":
            rows.reverse()
        return page_rows(rows, page, per_page), len(rows)

    def get_video(self, ws: Workspace, video_id: str) -> Video:
        """One video of the workspace (404 / 400404 when missing or another workspace's)."""
        with self.lock:
            return self.video(ws, video_id)

    def update_video(self, ws: Workspace, video_id: str, changes: dict[str, Any]) -> Video:
        """Apply the passed fields (in the form the service keeps); updated_at is set when one changed."""
        stored = dict(changes)
        variants = ws.variants
        if "title" in stored:
            stored["title"] = variants.stored_title(stored["title"])
        if "description" in stored:
            stored["description"] = variants.stored_description(stored["description"])
        if "tags" in stored:
            stored["tags"] = variants.stored_tags(stored["tags"])
        with self.lock:
            video = self.video(ws, video_id)
            admit_change(ws)
            if apply_changes(video, stored):
                self.touch(video)
            return video

    def delete_video(self, ws: Workspace, video_id: str) -> None:
        """Delete a video permanently, with its stored file."""
        with self.lock:
            video = self.video(ws, video_id)
            admit_change(ws)
            del ws.videos[video_id]
            video.generation += 1
            self.release(ws, video.path)

    def copy_video(self, ws: Workspace, video_id: str, parent_id: str | None) -> Video:
        """A full copy (same media and metadata, new id); the destination folder is checked first."""
        with self.lock:
            target = self.parent(ws, parent_id, "parent_id") if parent_id is not None else None
            src = self.video(ws, video_id)
            if src.path is None:
                raise not_ready("video_id", "a video whose upload is complete")
            project_id, folder_id = target if target is not None else (src.project_id, src.folder_id)
            copy = self.new_video(ws, project_id, folder_id, src.title)
            for key in (
                "subtitle",
                "version",
                "file_size",
                "md5",
                "original_name",
                "stored_at",
                "privacy_type",
                "chapters_enabled",
                "additional_materials_enabled",
            ):
                setattr(copy, key, getattr(src, key))
            copy.path = src.path
            variants = ws.variants  # the copy is stored like any write: in the form the service keeps
            copy.description = variants.stored_description(src.description)
            copy.chapters = variants.stored_chapters(src.chapters)
            copy.privacy_domains = list(src.privacy_domains)
            copy.tags = variants.stored_tags(src.tags)
            if src.status == "done" and src.info is not None:
                copy.info = src.info
                copy.status = "done"
                copy.progress = 100.0
            else:
                self.start_processing(ws, copy)
            return copy

    def move_video(self, ws: Workspace, video_id: str, project_id: str, folder_id: str | None) -> Video:
        """Move a video to another project (and folder); the id stays."""
        with self.lock:
            if project_id not in ws.projects:
                raise not_exists("project_id", "existing project id")
            if folder_id is not None and ws.folders.get(folder_id) != project_id:
                raise folder_missing("folder_id")
            video = self.video(ws, video_id)
            admit_change(ws)
            if (video.project_id, video.folder_id) != (project_id, folder_id):
                video.project_id, video.folder_id = project_id, folder_id
                self.touch(video)
            return video

    def set_chapters(
        self, ws: Workspace, video_id: str, items: list[dict[str, Any]], enabled: bool | None
    ) -> Video:
        """Replace every chapter marker (an empty list clears them)."""
        with self.lock:
            video = self.video(ws, video_id)
            video.chapters = ws.variants.stored_chapters(items)
            if enabled is not None:
                video.chapters_enabled = enabled
            self.touch(video)
            return video

    def _require_done(self, video: Video, name: str) -> MediaInfo:
        if video.status != "done" or video.info is None or video.path is None:
            raise not_ready(name)
        return video.info

    def prepare_cut(
        self,
        ws: Workspace,
        video_id: str,
        *,
        trim: list[tuple[float, float | None]],
        crop: tuple[int, int, int, int] | None,
        project_id: str | None,
        folder_id: str | None,
        title: str | None,
        description: str | None,
    ) -> CutPlan:
        """Check a cut against the video (done, trim inside the duration, crop inside the frame)."""
        with self.lock:
            if project_id is not None and project_id not in ws.projects:
                raise not_exists("project_id", "existing project id")
            if folder_id is not None:
                owner = ws.folders.get(folder_id)
                if owner is None or (project_id is not None and owner != project_id):
                    raise folder_missing("folder_id")
            video = self.video(ws, video_id)
            info = self._require_done(video, "video_id")
            bad: list[Invalid] = []
            for i, (start, _length) in enumerate(trim):
                if start >= info.duration:
                    bad.append(
                        Invalid(f"trim[{i}].start", "max", f"less than the duration {info.duration:.3f}")
                    )
            if crop is not None:
                w, h, x, y = crop
                if x + w > info.width or y + h > info.height:
                    bad.append(Invalid("crop", "max", f"inside the {info.width}x{info.height} frame"))
            if bad:
                raise validation(*bad)
            assert video.path is not None
            return CutPlan(
                src=video.path,
                trim=tuple(trim),
                crop=crop,
                version=video.version,
                project_id=project_id,
                folder_id=folder_id,
                title=title,
                description=description,
            )

    def commit_cut(
        self, ws: Workspace, video_id: str, plan: CutPlan, dst: Path, info: MediaInfo, md5: str
    ) -> Video:
        """Write a cut back to the same id: bytes replaced, version and duration change, processed again."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.version != plan.version:
                dst.unlink(missing_ok=True)
                raise not_found("video") if video is None else video_changed()
            old = video.path
            self.store_file(video, dst, dst.stat().st_size, md5, video.original_name)
            video.version += 1
            if plan.project_id is not None:
                video.project_id = plan.project_id
                video.folder_id = plan.folder_id
            elif plan.folder_id is not None:
                video.project_id, video.folder_id = ws.folders[plan.folder_id], plan.folder_id
            if plan.title is not None:
                video.title = ws.variants.stored_title(plan.title)
            if plan.description is not None:
                video.description = ws.variants.stored_description(plan.description)
            video.info = info
            self.touch(video)
            self.release(ws, old)
            self.start_processing(ws, video, info)
            return video

    def prepare_concat(
        self, ws: Workspace, video_id: str, prepend: list[str], append: list[str]
    ) -> list[Path]:
        """The files to join in order (prepend, the video, append); every one must be done."""
        with self.lock:
            video = self.video(ws, video_id)
            self._require_done(video, "video_id")
            paths: list[Path] = []
            bad: list[Invalid] = []
            for name, ids in (("prepend", prepend), ("append", append)):
                for i, other_id in enumerate(ids):
                    other = ws.videos.get(other_id)
                    field = f"{name}[{i}].video_id"
                    if other is None:
                        bad.append(Invalid(field, "not exists", "existing video id"))
                    elif other.status != "done" or other.path is None:
                        bad.append(Invalid(field, "not ready", "a video in status done"))
            if bad:
                raise validation(*bad)
            for other_id in prepend:
                paths.append(ws.videos[other_id].path)  # type: ignore[arg-type]
            paths.append(video.path)  # type: ignore[arg-type]
            for other_id in append:
                paths.append(ws.videos[other_id].path)  # type: ignore[arg-type]
            return paths

    def commit_concat(self, ws: Workspace, video_id: str, dst: Path, info: MediaInfo, md5: str) -> Video:
        """The new video holding the joined media, in the source's project and folder."""
        with self.lock:
            src = ws.videos.get(video_id)
            if src is None:
                dst.unlink(missing_ok=True)
                raise not_found("video")
            try:
                video = self.new_video(ws, src.project_id, src.folder_id, src.title)
            except ApiError:  # refused by the workspace's quota or billing state: the joined file goes
                dst.unlink(missing_ok=True)
                raise
            video.description = ws.variants.stored_description(src.description)
            self.store_file(video, dst, dst.stat().st_size, md5, f"{src.title}.mp4")
            video.info = info
            self.start_processing(ws, video, info)
            return video

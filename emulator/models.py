"""The emulator's state and one method per API operation, raising errors with the spec's codes."""

from __future__ import annotations

import itertools
import re
import secrets
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from emulator.errors import ApiError, Invalid, folder_missing, not_found, validation
from emulator.ids import new_id
from emulator.media import MediaInfo
from emulator.state import Project, UploadSession, Video, Workspace
from emulator.variants import NONE, Variants

PROCESSING_MODES = ("immediate", "manual", "timed")
STATUSES = ("pending", "uploading", "pre-processing", "processing", "aborted", "done", "error")
TERMINAL = frozenset({"done", "error", "aborted"})
SORTABLE = ("created_at", "updated_at", "title", "duration")
PRIVACY_TYPES = ("anywhere", "nowhere", "custom")
LOG_CAP = 200_000
_SUFFIX = re.compile(r"^\.[A-Za-z0-9]{1,8}$")

# (ws, video_id, status, message) -> None; called on every status change (webhooks)
StatusListener = Callable[[Workspace, str, str, "str | None"], None]
# (ws, video_id, generation, info or None) -> None; asks the processor to process a stored file
ProcessRequest = Callable[[Workspace, str, int, "MediaInfo | None"], None]


@dataclass(frozen=True)
class LogEntry:
    """One request seen by the API or upload host."""

    time: float
    host: str
    method: str
    path: str
    status: int
    workspace_id: str | None
    api: bool
    dropped: bool = False


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


def utcnow() -> datetime:
    """Current UTC time."""
    return datetime.now(UTC)


class Emulator:
    """All workspaces and their objects; every public method is one operation (thread-safe)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        rate_per_second: int = 10,
        rate_per_minute: int = 300,
        processing: str = "immediate",
        processing_seconds: float = 0.0,
    ) -> None:
        self.data_dir = data_dir
        self.lock = threading.RLock()
        self.base_url = ""
        self.upload_url = ""
        self.default_limits = (rate_per_second, rate_per_minute)
        self.default_processing = (processing, processing_seconds)
        self.workspaces: dict[str, Workspace] = {}
        self.tokens: dict[str, Workspace] = {}
        self.secrets: dict[str, UploadSession] = {}
        self.log: deque[LogEntry] = deque(maxlen=LOG_CAP)
        self._seq = itertools.count(1)
        self.on_status: StatusListener | None = None
        self.on_process: ProcessRequest | None = None
        #: Variants every new workspace gets unless told otherwise (videoferry emulator --variant NAME).
        self.default_variants: Variants = NONE

    # ------------------------------------------------------------------ workspaces and projects

    def create_workspace(
        self,
        *,
        rate_per_second: int | None = None,
        rate_per_minute: int | None = None,
        processing: str | None = None,
        processing_seconds: float | None = None,
        token: str | None = None,
        workspace_id: str | None = None,
        project_id: str | None = None,
        folder_id: str | None = None,
    ) -> Workspace:
        """A new isolated workspace with a token and one project holding one folder."""
        rps, rpm = self.default_limits
        mode, seconds = self.default_processing
        with self.lock:
            ws = Workspace(
                id=workspace_id or new_id(),
                token=token or secrets.token_hex(20),
                rate_per_second=rps if rate_per_second is None else rate_per_second,
                rate_per_minute=rpm if rate_per_minute is None else rate_per_minute,
                processing=mode if processing is None else processing,
                processing_seconds=seconds if processing_seconds is None else processing_seconds,
                default_project_id="",
                default_folder_id="",
            )
            ws.default_project_id, ws.default_folder_id = self._add_project(ws, project_id, folder_id)
            ws.variants = self.default_variants
            self.workspaces[ws.id] = ws
            self.tokens[ws.token] = ws
            return ws

    def _add_project(
        self, ws: Workspace, project_id: str | None = None, folder_id: str | None = None
    ) -> tuple[str, str]:
        project = Project(id=project_id or new_id())
        folder = folder_id or new_id()
        project.folders.append(folder)
        ws.projects[project.id] = project
        ws.folders[folder] = project.id
        return project.id, folder

    def create_project(self, ws: Workspace) -> tuple[str, str]:
        """A new project with one folder in it: (project_id, folder_id)."""
        with self.lock:
            return self._add_project(ws)

    def workspace_info(self, ws: Workspace) -> dict[str, Any]:
        """The keys the control API answers for a workspace."""
        return {
            "base_url": self.base_url,
            "upload_url": self.upload_url,
            "token": ws.token,
            "workspace_id": ws.id,
            "project_id": ws.default_project_id,
            "folder_id": ws.default_folder_id,
        }

    def by_token(self, token: str) -> Workspace | None:
        """The workspace a token belongs to."""
        return self.tokens.get(token)

    def reset(self) -> None:
        """Forget every workspace and file and the request log."""
        with self.lock:
            for ws in self.workspaces.values():
                ws.videos.clear()
                ws.sessions.clear()
            self.workspaces.clear()
            self.tokens.clear()
            self.secrets.clear()
            self.log.clear()
            for child in self.data_dir.iterdir() if self.data_dir.exists() else []:
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)

    # ------------------------------------------------------------------ helpers

    def _video(self, ws: Workspace, video_id: str) -> Video:
        video = ws.videos.get(video_id)
        if video is None:
            raise not_found("video")
        return video

    def _parent(self, ws: Workspace, parent_id: str, name: str) -> tuple[str, str | None]:
        """Resolve a project-or-folder id to (project_id, folder_id); 400236 when neither exists."""
        if parent_id in ws.projects:
            return parent_id, None
        if parent_id in ws.folders:
            return ws.folders[parent_id], parent_id
        raise folder_missing(name)

    def new_file(self, ws: Workspace, name: str | None = None, suffix: str | None = None) -> Path:
        """A fresh path under the workspace's data directory."""
        if suffix is None:
            suffix = Path(name).suffix if name else ""
            suffix = suffix if _SUFFIX.match(suffix) else ".bin"
        folder = self.data_dir / ws.id
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{new_id()}{suffix}"

    def _release(self, ws: Workspace, path: Path | None) -> None:
        """Delete a stored file once no video of the workspace refers to it."""
        if path is None:
            return
        if any(v.path == path for v in ws.videos.values()):
            return
        path.unlink(missing_ok=True)

    def _new_video(self, ws: Workspace, project_id: str, folder_id: str | None, title: str) -> Video:
        seq = next(self._seq)
        video = Video(
            id=new_id(),
            workspace_id=ws.id,
            project_id=project_id,
            folder_id=folder_id,
            title=title,
            seq=seq,
            created_at=utcnow(),
            short_id=100000 + seq,
            player_id=new_id(),
            storage_id=new_id(),
        )
        ws.videos[video.id] = video
        return video

    def set_status(self, ws: Workspace, video: Video, status: str, message: str | None = None) -> None:
        """Change a video's status and tell the listener (webhooks)."""
        if video.status == status and video.message == message:
            return
        video.status = status
        video.message = message if status == "error" else None
        if status in ("done",):
            video.progress = 100.0
        if self.on_status is not None:
            self.on_status(ws, video.id, status, video.message)

    def _touch(self, video: Video) -> None:
        video.updated_at = utcnow()

    def _start_processing(self, ws: Workspace, video: Video, info: MediaInfo | None = None) -> None:
        video.generation += 1
        video.progress = 0.0
        video.processing_since = None
        self.set_status(ws, video, "pre-processing")
        if self.on_process is not None:
            self.on_process(ws, video.id, video.generation, info)

    def _store(self, video: Video, path: Path, size: int, md5: str | None, name: str | None) -> None:
        video.path = path
        video.file_size = size
        video.md5 = md5
        video.original_name = name or video.original_name or video.title
        video.stored_at = utcnow()
        video.info = None

    # ------------------------------------------------------------------ videos (4.1)

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
    ) -> tuple[list[Video], int]:
        """One page of the workspace's videos after filters and ordering, and the total."""
        with self.lock:
            rows = [
                v
                for v in ws.videos.values()
                if (project_id is None or v.project_id == project_id)
                and (folder_id is None or v.folder_id == folder_id)
                and (title is None or v.title == title)
                and (created_before is None or v.created_at <= created_before)
            ]
        if order_field == "title":
            rows.sort(key=lambda v: (v.title, v.seq))
        elif order_field == "duration":
            rows.sort(key=lambda v: (v.info.duration if v.info else 0.0, v.seq))
        elif order_field == "updated_at":
            rows.sort(key=lambda v: (v.updated_at is not None, v.updated_at or v.created_at, v.seq))
        else:
            rows.sort(key=lambda v: (v.created_at, v.seq))
        if order_dir == "desc":
            rows.reverse()
        start = (page - 1) * per_page
        return rows[start : start + per_page], len(rows)

    def get_video(self, ws: Workspace, video_id: str) -> Video:
        """One video of the workspace (404 / 400404 when missing or another workspace's)."""
        with self.lock:
            return self._video(ws, video_id)

    def update_video(self, ws: Workspace, video_id: str, changes: dict[str, Any]) -> Video:
        """Apply only the passed fields; updated_at is set when something changed."""
        with self.lock:
            video = self._video(ws, video_id)
            changed = False
            for key, value in changes.items():
                if getattr(video, key) != value:
                    setattr(video, key, value)
                    changed = True
            if changed:
                self._touch(video)
            return video

    def delete_video(self, ws: Workspace, video_id: str) -> None:
        """Delete a video permanently, with its stored file."""
        with self.lock:
            video = self._video(ws, video_id)
            del ws.videos[video_id]
            video.generation += 1
            self._release(ws, video.path)

    def copy_video(self, ws: Workspace, video_id: str, parent_id: str | None) -> Video:
        """A full copy (same media and metadata, new id); the destination folder is checked first."""
        with self.lock:
            target = self._parent(ws, parent_id, "parent_id") if parent_id is not None else None
            src = self._video(ws, video_id)
            if src.path is None:
                raise validation(Invalid("video_id", "not ready", "a video whose upload is complete"))
            project_id, folder_id = target if target is not None else (src.project_id, src.folder_id)
            copy = self._new_video(ws, project_id, folder_id, src.title)
            for key in (
                "subtitle",
                "description",
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
            copy.chapters = [dict(c) for c in src.chapters]
            copy.privacy_domains = list(src.privacy_domains)
            copy.tags = list(src.tags)
            if src.status == "done" and src.info is not None:
                copy.info = src.info
                copy.status = "done"
                copy.progress = 100.0
            else:
                self._start_processing(ws, copy)
            return copy

    def move_video(self, ws: Workspace, video_id: str, project_id: str, folder_id: str | None) -> Video:
        """Move a video to another project (and folder); the id stays."""
        with self.lock:
            if project_id not in ws.projects:
                raise validation(Invalid("project_id", "not exists", "existing project id"))
            if folder_id is not None and ws.folders.get(folder_id) != project_id:
                raise folder_missing("folder_id")
            video = self._video(ws, video_id)
            if (video.project_id, video.folder_id) != (project_id, folder_id):
                video.project_id, video.folder_id = project_id, folder_id
                self._touch(video)
            return video

    def set_chapters(
        self, ws: Workspace, video_id: str, items: list[dict[str, Any]], enabled: bool | None
    ) -> Video:
        """Replace every chapter marker (an empty list clears them)."""
        with self.lock:
            video = self._video(ws, video_id)
            video.chapters = items
            if enabled is not None:
                video.chapters_enabled = enabled
            self._touch(video)
            return video

    def _require_done(self, video: Video, name: str) -> MediaInfo:
        if video.status != "done" or video.info is None or video.path is None:
            raise validation(Invalid(name, "not ready", "a video in status done"))
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
                raise validation(Invalid("project_id", "not exists", "existing project id"))
            if folder_id is not None:
                owner = ws.folders.get(folder_id)
                if owner is None or (project_id is not None and owner != project_id):
                    raise folder_missing("folder_id")
            video = self._video(ws, video_id)
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
                raise (
                    not_found("video")
                    if video is None
                    else ApiError(500, 500500, "the video changed during the cut")
                )
            old = video.path
            self._store(video, dst, dst.stat().st_size, md5, video.original_name)
            video.version += 1
            if plan.project_id is not None:
                video.project_id = plan.project_id
                video.folder_id = plan.folder_id
            elif plan.folder_id is not None:
                video.project_id, video.folder_id = ws.folders[plan.folder_id], plan.folder_id
            if plan.title is not None:
                video.title = plan.title
            if plan.description is not None:
                video.description = plan.description
            video.info = info
            self._touch(video)
            self._release(ws, old)
            self._start_processing(ws, video, info)
            return video

    def prepare_concat(
        self, ws: Workspace, video_id: str, prepend: list[str], append: list[str]
    ) -> list[Path]:
        """The files to join in order (prepend, the video, append); every one must be done."""
        with self.lock:
            video = self._video(ws, video_id)
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
            video = self._new_video(ws, src.project_id, src.folder_id, src.title)
            video.description = src.description
            self._store(video, dst, dst.stat().st_size, md5, f"{src.title}.mp4")
            video.info = info
            self._start_processing(ws, video, info)
            return video

    # ------------------------------------------------------------------ processing (called by the processor)

    def processing_input(self, ws: Workspace, video_id: str, generation: int) -> tuple[Path, Any] | None:
        """The stored file and pending trim of a video, or None when the work is stale."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation or video.path is None:
                return None
            return video.path, video.trim

    def processing_trimmed(self, ws: Workspace, video_id: str, generation: int, dst: Path, md5: str) -> bool:
        """Swap in the file produced by an upload's X-Video-Trim."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation:
                dst.unlink(missing_ok=True)
                return False
            old = video.path
            name = video.original_name
            self._store(video, dst, dst.stat().st_size, md5, name)
            video.trim = None
            self._release(ws, old)
            return True

    def processing_started(
        self, ws: Workspace, video_id: str, generation: int, info: MediaInfo
    ) -> tuple[str, float] | None:
        """Record the probe result and enter processing: (mode, seconds) of the workspace, None when stale."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation:
                return None
            video.info = info
            mode = ws.processing
            video.processing_seconds = ws.processing_seconds
            video.processing_since = time.monotonic()
            video.progress = 100.0 if mode == "manual" else 0.0
            self.set_status(ws, video, "processing")
            return mode, video.processing_seconds

    def processing_finished(
        self, ws: Workspace, video_id: str, generation: int, status: str, message: str | None = None
    ) -> None:
        """End processing with done or error (ignored when stale)."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation:
                return
            video.processing_since = None
            self.set_status(ws, video, status, message)

    def force_status(self, ws: Workspace, video_id: str, status: str, message: str | None) -> Video:
        """Control API: set a status by hand (pending processing work is dropped)."""
        with self.lock:
            video = self._video(ws, video_id)
            video.generation += 1
            video.processing_since = None
            if status == "error" and message is None:
                message = "set by the emulator control API"
            self.set_status(ws, video, status, message)
            return video

    # ------------------------------------------------------------------ uploads (4.2)

    def init_upload(
        self,
        ws: Workspace,
        *,
        kind: str,
        parent_id: str | None,
        title: str | None,
        video_id: str | None,
        filesize: int,
        filename: str | None,
        subtitle: str | None,
        description: str | None,
    ) -> UploadSession:
        """POST /v2/init: a tus resource; for type video the video exists at once in status pending."""
        with self.lock:
            if kind == "video":
                assert parent_id is not None and title is not None
                project_id, folder_id = self._parent(ws, parent_id, "parent_id")
                video = self._new_video(ws, project_id, folder_id, title)
                video.subtitle = subtitle or ""
                video.description = description or ""
                video.original_name = filename or ""
                target_id = video.id
                session_id = video.id
            else:
                assert video_id is not None
                if video_id not in ws.videos:
                    raise validation(Invalid("video_id", "not exists", "existing video id"))
                target_id = video_id
                session_id = video_id if kind == "replace" else new_id()
            session = UploadSession(
                id=session_id,
                secret=secrets.token_urlsafe(24),
                workspace_id=ws.id,
                kind=kind,
                video_id=target_id,
                filesize=filesize,
                filename=filename,
                path=self.new_file(ws, filename),
            )
            session.path.touch()
            ws.sessions[session.secret] = session
            self.secrets[session.secret] = session
            return session

    def endpoint_of(self, session: UploadSession) -> str:
        """The absolute upload address of a session."""
        return f"{self.upload_url}/upload/{session.secret}"

    def session_by_secret(self, secret: str) -> tuple[Workspace, UploadSession] | None:
        """The session (and workspace) an upload address belongs to."""
        session = self.secrets.get(secret)
        if session is None:
            return None
        ws = self.workspaces.get(session.workspace_id)
        return (ws, session) if ws is not None else None

    def session_received(self, ws: Workspace, session: UploadSession, added: int) -> None:
        """Bytes arrived at a tus resource: the video is uploading, progress follows the offset."""
        with self.lock:
            video = ws.videos.get(session.video_id)
            if video is None or session.kind != "video":
                return
            if video.status == "pending" and added > 0:
                self.set_status(ws, video, "uploading")
            if session.filesize:
                video.progress = round(100.0 * session.offset / session.filesize, 1)

    def session_complete(self, ws: Workspace, session: UploadSession) -> None:
        """offset == filesize: store the file on its video (or attachment) and start processing."""
        with self.lock:
            session.complete = True
            video = ws.videos.get(session.video_id)
            if video is None:
                return
            md5 = session.md5.hexdigest()
            if session.kind == "attachment":
                video.additional_materials.append(
                    {
                        "id": session.id,
                        "original_name": session.filename or session.path.name,
                        "file_size": session.offset,
                        "md5": md5,
                        "created_at": utcnow(),
                    }
                )
                self._touch(video)
                return
            old = video.path
            self._store(video, session.path, session.offset, md5, session.filename or video.original_name)
            if session.kind == "replace":
                video.version += 1
                self._touch(video)
            self._release(ws, old)
            self._start_processing(ws, video)

    def single_upload(
        self,
        ws: Workspace,
        *,
        parent_id: str,
        title: str,
        description: str | None,
        filename: str | None,
        replace_id: str | None,
        trim: tuple[float, float | None] | None,
    ) -> Video:
        """POST /v2/video accepted: the (new or replaced) video is uploading."""
        with self.lock:
            project_id, folder_id = self._parent(ws, parent_id, "X-Parent-ID")
            if replace_id is not None:
                video = ws.videos.get(replace_id)
                if video is None:
                    raise validation(Invalid("X-Replace-Video-ID", "not exists", "existing video id"))
                video.title = title
                if description is not None:
                    video.description = description
                self._touch(video)
            else:
                video = self._new_video(ws, project_id, folder_id, title)
                video.description = description or ""
            video.generation += 1
            video.trim = trim
            video.progress = 0.0
            if filename:
                video.original_name = filename
            self.set_status(ws, video, "uploading")
            return video

    def single_received(
        self,
        ws: Workspace,
        video_id: str,
        generation: int,
        path: Path,
        size: int,
        md5: str | None,
        filename: str | None,
    ) -> bool:
        """The whole file of a single-request upload (or URL import) arrived: store it and process it."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation:
                path.unlink(missing_ok=True)
                return False
            old = video.path
            replaced = old is not None
            self._store(video, path, size, md5, filename or video.original_name)
            if replaced:
                video.version += 1
            self._release(ws, old)
            self._start_processing(ws, video)
            return True

    def single_failed(self, ws: Workspace, video_id: str, generation: int, message: str) -> None:
        """A single-request upload broke off or its URL could not be fetched: status error."""
        with self.lock:
            video = ws.videos.get(video_id)
            if video is None or video.generation != generation:
                return
            self.set_status(ws, video, "error", message)

    # ------------------------------------------------------------------ request log

    def record(self, entry: LogEntry) -> None:
        """Append to the request log (capped)."""
        self.log.append(entry)

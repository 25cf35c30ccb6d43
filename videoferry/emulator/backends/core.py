"""The core of the emulator's state: the workspace registry, the request log and the stored files."""

from __future__ import annotations

import itertools
import re
import secrets
import shutil
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videoferry.emulator.backends.lifecycle import LifecycleBackend
from videoferry.emulator.backends.uploads import UploadsBackend
from videoferry.emulator.backends.videos import VideosBackend
from videoferry.emulator.ids import new_id, parse_id
from videoferry.emulator.media.probe import MediaInfo
from videoferry.emulator.state import Project, UploadSession, Video, Workspace
from videoferry.emulator.variants import NONE, Variants

PROCESSING_MODES = ("immediate", "manual", "timed")
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
    #: A tus PATCH's Upload-Offset (where the bytes it sent begin); None for any other request.
    upload_offset: int | None = None


class Emulator:
    """All workspaces and their objects; the backends (videos, uploads, lifecycle) hold the operations."""

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
        #: The requests received and not answered yet (status 0), by arrival number; a test waits on these
        #: to act while a request hangs (a latency fault) rather than guess when it was sent.
        self.answering: dict[int, LogEntry] = {}
        self.seq = itertools.count(1)
        self.on_status: StatusListener | None = None
        self.on_process: ProcessRequest | None = None
        #: Variants every new workspace gets unless told otherwise (videoferry emulator --variant NAME).
        self.default_variants: Variants = NONE
        self.videos = VideosBackend(self)
        self.uploads = UploadsBackend(self)
        self.lifecycle = LifecycleBackend(self)

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

    def video_owner(self, raw_video_id: str) -> Workspace | None:
        """The workspace holding a video (a signed link names no token), None when no workspace has it."""
        try:
            video_id = parse_id(raw_video_id)
        except Exception:  # noqa: BLE001 - an unparseable id in a link is just a missing object
            return None
        with self.lock:
            for ws in self.workspaces.values():
                if video_id in ws.videos:
                    return ws
        return None

    def foreign(self, ws: Workspace, object_ids: Iterable[str]) -> bool:
        """Whether one of these ids names no object of `ws` but an object of another workspace.

        Spec 5.2: a token of another workspace is 401 / 100102, so a request naming another workspace's
        object answers that instead of 404 / 400236. Module stores in `Workspace.extras` take part through
        a `holds(id) -> bool` method.
        """
        with self.lock:
            wanted = [i for i in object_ids if not _holds(ws, i)]
            others = [other for other in self.workspaces.values() if other is not ws]
            return any(_holds(other, i) for i in wanted for other in others)

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

    # ------------------------------------------------------------------ files and statuses

    def new_file(self, ws: Workspace, name: str | None = None, suffix: str | None = None) -> Path:
        """A fresh path under the workspace's data directory."""
        if suffix is None:
            suffix = Path(name).suffix if name else ""
            suffix = suffix if _SUFFIX.match(suffix) else ".bin"
        folder = self.data_dir / ws.id
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{new_id()}{suffix}"

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

    # ------------------------------------------------------------------ request log

    def record(self, entry: LogEntry) -> None:
        """Append to the request log (capped)."""
        self.log.append(entry)


def _holds(ws: Workspace, object_id: str) -> bool:
    """Whether the workspace has an object with this id (videos, projects, folders, module stores)."""
    if object_id in ws.videos or object_id in ws.projects or object_id in ws.folders:
        return True
    return any(getattr(extra, "holds", lambda _: False)(object_id) for extra in ws.extras.values())

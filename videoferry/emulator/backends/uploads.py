"""The uploads backend (4.2): init and tus sessions, single-request and URL uploads."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from videoferry.emulator.backends.base import Backend
from videoferry.emulator.errors import not_exists
from videoferry.emulator.ids import new_id
from videoferry.emulator.refusals import admit_create
from videoferry.emulator.state import UploadSession, Video, Workspace, utcnow


class UploadsBackend(Backend):
    """The operations of /v2/init, the tus endpoints and /v2/video."""

    def init_upload(
        self,
        ws: Workspace,
        *,
        kind: str,
        parent_id: str | None,
        title: str | None,
        video_id: str | None,
        filesize: int | None,
        filename: str | None,
        subtitle: str | None,
        description: str | None,
        preview: dict[str, Any] | None = None,
    ) -> UploadSession:
        """POST /v2/init: a tus resource; for type video the video exists at once in status pending."""
        with self.lock:
            if kind == "video":
                assert parent_id is not None and title is not None
                project_id, folder_id = self.parent(ws, parent_id, "parent_id")
                video = self.new_video(ws, project_id, folder_id, title)
                video.subtitle = subtitle or ""
                video.description = ws.variants.stored_description(description or "")
                video.original_name = filename or ""
                video.preview = preview
                target_id = video.id
                session_id = video.id
            else:
                assert video_id is not None
                if video_id not in ws.videos:
                    raise not_exists("video_id", "existing video id")
                admit_create(ws)
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
                path=self.core.new_file(ws, filename),
                preview=preview if kind == "replace" else None,
            )
            session.path.touch()
            ws.sessions[session.secret] = session
            self.core.secrets[session.secret] = session
            return session

    def endpoint_of(self, session: UploadSession) -> str:
        """The absolute upload address of a session."""
        return f"{self.core.upload_url}/upload/{session.secret}"

    def session_by_secret(self, secret: str) -> tuple[Workspace, UploadSession] | None:
        """The session (and workspace) an upload address belongs to."""
        session = self.core.secrets.get(secret)
        if session is None:
            return None
        ws = self.core.workspaces.get(session.workspace_id)
        return (ws, session) if ws is not None else None

    def session_received(self, ws: Workspace, session: UploadSession, added: int) -> None:
        """Bytes arrived at a tus resource: the video is uploading, progress follows the offset."""
        with self.lock:
            video = ws.videos.get(session.video_id)
            if video is None or session.kind != "video":
                return
            if video.status == "pending" and added > 0:
                self.core.set_status(ws, video, "uploading")
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
                        "original_name": ws.variants.stored_name(session.filename or session.path.name),
                        "file_size": session.offset,
                        "md5": md5,
                        "created_at": utcnow(),
                    }
                )
                self.touch(video)
                return
            old = video.path
            self.store_file(video, session.path, session.offset, md5, session.filename or video.original_name)
            if session.kind == "replace":
                video.version += 1
                video.preview = session.preview or video.preview
                self.touch(video)
            self.release(ws, old)
            self.start_processing(ws, video)

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
            project_id, folder_id = self.parent(ws, parent_id, "X-Parent-ID")
            if replace_id is not None:
                video = ws.videos.get(replace_id)
                if video is None:
                    raise not_exists("X-Replace-Video-ID", "existing video id")
                admit_create(ws)
                video.title = ws.variants.stored_title(title)
                if description is not None:
                    video.description = ws.variants.stored_description(description)
                self.touch(video)
            else:
                video = self.new_video(ws, project_id, folder_id, title)
                video.description = ws.variants.stored_description(description or "")
            video.generation += 1
            video.trim = trim
            video.progress = 0.0
            if filename:
                video.original_name = filename
            self.core.set_status(ws, video, "uploading")
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
            video = self.current(ws, video_id, generation)
            if video is None:
                path.unlink(missing_ok=True)
                return False
            old = video.path
            replaced = old is not None
            self.store_file(video, path, size, md5, filename or video.original_name)
            if replaced:
                video.version += 1
            self.release(ws, old)
            self.start_processing(ws, video)
            return True

    def single_failed(self, ws: Workspace, video_id: str, generation: int, message: str) -> None:
        """A single-request upload broke off or its URL could not be fetched: status error."""
        with self.lock:
            video = self.current(ws, video_id, generation)
            if video is None:
                return
            self.core.set_status(ws, video, "error", message)

    def store_recording(
        self,
        ws: Workspace,
        parent: tuple[str, str | None],
        title: str,
        path: Path,
        md5: str,
        meta: dict[str, str],
    ) -> Video:
        """A broadcast's recording as a whole file: a new video with meta, processed like an upload."""
        with self.lock:
            video = self.new_video(ws, parent[0], parent[1], title, admit=False)
            self.store_file(video, path, path.stat().st_size, md5, f"{title}.mp4")
            video.meta = meta
            self.core.set_status(ws, video, "uploading")
            self.start_processing(ws, video)
            return video

"""Files sent through /v2/init sessions by tus (a replace, additional materials), each material once.

The bytes go by connectors/tus.py from the server's offset, so a cut connection resumes where the service
is. An upload given up (tries spent, the address gone) leaves unknown whether its last byte arrived: it is
an UnknownOutcomeError, for the caller's exactly-once step to look up (tasks/exactly_once.py), never a
failure repeated blind. Materials are looked up on the video before each is sent (name and size: the
spec does not show a material's shape), so a call made again never attaches a second copy.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connectors.errors import UnknownOutcomeError
from connectors.sources import ByteSource, open_source
from connectors.tus import TusEndpointGoneError, TusError, TusUpload
from core.tidy import same_text
from tasks.stop import UploadStopped

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from connectors.models import Video
    from connectors.s3 import S3Config
    from tasks.stop import Stop


def send_by_tus(
    client: VideoClient, endpoint: str, source: ByteSource, *, what: str, chunk_size: int, stop: Stop
) -> None:
    """A file to the address the caller's init just opened for it (declaring the source's size), by tus: no
    HEAD first (nothing was sent to it yet), resumed from the server's offset after a cut.

    A failure that leaves unknown whether the last byte arrived is UnknownOutcomeError; a refusal stays a
    TusError (a VideoApiError); the run's stop ends it between two chunks (UploadStopped).
    """

    def on_progress(_offset: int) -> None:
        if stop.is_set():
            raise UploadStopped(what)

    try:
        with TusUpload.from_transport(client.transport, chunk_size=chunk_size) as tus:
            tus.upload(endpoint, source, on_progress=on_progress, fresh_filesize=source.size)
    except TusError as exc:
        if not (exc.retryable or isinstance(exc, TusEndpointGoneError)):
            raise
        raise UnknownOutcomeError(
            f"{what} upload: {exc.message}",
            cause_kind="connection",
            status=exc.status,
            operation="tus_upload",
        ) from None


def material_name(source: str) -> str:
    """The file name a material is sent (and found) under: the source's last path part."""
    return os.path.basename(source.rstrip("/")) or source


def materials_of(video: Video) -> list[dict[str, Any]]:
    """The video's additional materials as objects (anything else in the list is ignored)."""
    return [m for m in video.additional_materials or () if isinstance(m, dict)]


def has_material(video: Video, name: str, size: int | None) -> bool:
    """Whether the video holds a material of this name (and size, when both sides know one); the name as a
    plausible service keeps it (core.tidy.same_text: a file name from a Mac's disk is NFD, a service may keep
    it NFC), or every rerun would attach it again."""
    for material in materials_of(video):
        held_name = material.get("original_name")
        if not isinstance(held_name, str) or not same_text(name, held_name):
            continue
        held = material.get("file_size")
        if size is None or not isinstance(held, int) or held == size:
            return True
    return False


def missing_materials(video: Video, sources: Sequence[str]) -> list[str]:
    """The sources the video holds no material for (by name only: sizes are checked before sending)."""
    return [s for s in sources if not has_material(video, material_name(s), None)]


@dataclass
class Attached:
    """What attach_files did: the names sent now, and those the video already held."""

    sent: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)

    def detail(self) -> str:
        """One line for a report: how many attached, how many were there already."""
        parts = [f"{len(self.sent)} attached"] if self.sent or not self.present else []
        if self.present:
            parts.append(f"{len(self.present)} already there")
        return ", ".join(parts)


def attach_files(
    client: VideoClient,
    video_id: str,
    sources: Sequence[str],
    *,
    s3: S3Config | None,
    chunk_size: int,
    stop: Stop,
) -> Attached:
    """Each source made an additional material of video_id, unless the video already holds it (one GET
    before each: a material a lost answer left is never sent twice). SourceError names an unreadable one."""
    done = Attached()
    for uri in sources:
        source = open_source(uri, s3=s3)
        name = material_name(uri)
        if has_material(client.videos.get(video_id), name, source.size):
            done.present.append(name)
            continue
        session = client.uploads.init_attachment(video_id=video_id, filesize=source.size, filename=name)
        send_by_tus(client, session.endpoint, source, what="attachment", chunk_size=chunk_size, stop=stop)
        done.sent.append(name)
    return done

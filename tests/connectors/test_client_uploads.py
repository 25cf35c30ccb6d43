"""Uploads against the emulator (4.2): init + tus, single request, URL import, replace, trim, exact titles."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors import errors as E
from connectors.client import VideoClient
from connectors.limiter import ApiRateLimiter
from connectors.retry import RetryPolicy
from connectors.sources import LocalFileSource
from connectors.titles import PLACEHOLDER_PREFIX, header_safe_title
from connectors.tus import TusUpload
from emulator.control import EmulatorControl, Workspace
from tests.connectors.waiting import wait_terminal

FAST = RetryPolicy(max_attempts=5, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST) as c:
        yield c
    limiter.close()


@pytest.fixture()
def file_server(tmp_path: Path) -> Iterator[str]:
    """A plain HTTP server on loopback serving tmp_path (for import by URL)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_init_then_tus_keeps_any_title_exact(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    source = LocalFileSource(sample_clip)
    title = "Запись эфира 東京 🎥"
    session = client.uploads.create_video(
        parent_id=emu.project_id,
        title=title,
        filesize=source.size,
        filename="запись.mp4",
        description="описание",
    )
    assert session.endpoint.startswith(emu.upload_url)
    assert session.endpoint not in repr(session)
    assert client.videos.get(session.id).status == "pending"
    with TusUpload(chunk_size=64 * 1024) as tus:
        assert tus.upload(session.endpoint, source) == source.size
    video = wait_terminal(client, session.id)
    assert video.status == "done"
    assert video.title == title and video.description == "описание"


def test_single_upload_ascii_metadata_travels_exactly_and_the_rest_is_owed(
    client: VideoClient, emu: Workspace, sample_clip: Path
) -> None:
    result = client.uploads.single(
        parent_id=emu.folder_id,
        title="Café crème",  # latin-1, but a service may decode headers as UTF-8: not sent as is
        source=LocalFileSource(sample_clip),
        description="Ærø ½ øl",
        filename="café.mp4",
    )
    assert result.title_pending and result.pending_fields == ["title", "description"]
    result2 = client.uploads.single(
        parent_id=emu.folder_id,
        title="Plain title (1)",
        source=LocalFileSource(sample_clip),
        description="plain ASCII description",
    )
    assert not result2.title_pending and result2.pending_fields == []
    assert result2.title == "Plain title (1)" and result2.project_id == emu.project_id
    video = wait_terminal(client, result2.id)
    assert video.status == "done" and video.title == "Plain title (1)"
    assert video.description == "plain ASCII description" and video.folder_id == emu.folder_id


@pytest.mark.parametrize("title", ["Привет, мир", "東京の夜", "party 🎉🎉", " padded title "])
def test_title_that_cannot_travel_is_set_by_update(
    client: VideoClient, emu: Workspace, sample_clip: Path, title: str
) -> None:
    key = f"item:{title}"
    result = client.uploads.single(
        parent_id=emu.project_id,
        title=title,
        source=LocalFileSource(sample_clip),
        description="описание",
        title_key=key,
    )
    assert result.title_pending and set(result.pending_fields) == {"title", "description"}
    placeholder, _ = header_safe_title(title, key)
    assert result.title == placeholder and placeholder.startswith(PLACEHOLDER_PREFIX)
    # The caller can find the video by its deterministic placeholder, then set the real values.
    found = client.videos.list(project_id=emu.project_id, title=placeholder).items
    assert [v.id for v in found] == [result.id]
    client.videos.update(result.id, title=title, description="описание")
    video = client.videos.get(result.id)
    assert video.title == title and video.description == "описание"


def test_single_upload_from_bytes_and_empty_body(
    client: VideoClient, emu: Workspace, sample_clip: Path
) -> None:
    result = client.uploads.single(parent_id=emu.project_id, title="bytes", source=sample_clip.read_bytes())
    assert wait_terminal(client, result.id).status == "done"
    with pytest.raises(E.IoError) as info:
        client.uploads.single(parent_id=emu.project_id, title="empty", source=b"")
    assert info.value.code == 1 and info.value.status == 400


def test_import_by_url(
    client: VideoClient, emu: Workspace, sample_clip: Path, file_server: str, tmp_path: Path
) -> None:
    (tmp_path / "clip name.mp4").write_bytes(sample_clip.read_bytes())
    result = client.uploads.import_url(
        parent_id=emu.project_id,
        title="imported",
        url=f"{file_server}/clip name.mp4",
        filename="clip name.mp4",
    )
    assert result.status in ("uploading", "pending", "processing", "pre-processing", "done")
    video = wait_terminal(client, result.id)
    assert video.status == "done" and video.duration is not None and video.duration > 1.5
    broken = client.uploads.import_url(
        parent_id=emu.project_id, title="broken", url=f"{file_server}/missing.mp4"
    )
    assert wait_terminal(client, broken.id).status == "error"
    with pytest.raises(ValueError):
        client.uploads.import_url(parent_id=emu.project_id, title="x", url="ftp://example")


def test_trim_on_upload(
    client: VideoClient, emu: Workspace, sample_clip: Path, file_server: str, tmp_path: Path
) -> None:
    single = client.uploads.single(
        parent_id=emu.project_id, title="trimmed", source=LocalFileSource(sample_clip), trim=(0.5, 1.0)
    )
    (tmp_path / "c.mp4").write_bytes(sample_clip.read_bytes())
    imported = client.uploads.import_url(
        parent_id=emu.project_id, title="tail", url=f"{file_server}/c.mp4", trim=(1.0, None)
    )
    for video_id in (single.id, imported.id):
        video = wait_terminal(client, video_id)
        assert video.status == "done" and video.duration is not None
        assert 0.5 < video.duration < 1.6


def test_replace_keeps_the_id(client: VideoClient, emu: Workspace, sample_clip: Path, clip_factory) -> None:  # type: ignore[no-untyped-def]
    first = client.uploads.single(parent_id=emu.project_id, title="v1", source=LocalFileSource(sample_clip))
    original = wait_terminal(client, first.id)
    shorter = clip_factory(1.0)
    again = client.uploads.single(
        parent_id=emu.project_id,
        title="v2",
        source=LocalFileSource(shorter),
        replace_video_id=first.id,
    )
    assert again.id == first.id
    replaced = wait_terminal(client, first.id)
    assert replaced.status == "done" and replaced.title == "v2"
    assert replaced.duration is not None and original.duration is not None
    assert replaced.duration < original.duration - 0.5


def test_upload_validation_errors_are_not_repeated(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    with pytest.raises(E.ClientError) as info:
        client.uploads.create_video(parent_id="5b2f4a0e-8f0c-4a4e-9a57-3f6f0f7d6c11", title="x", filesize=10)
    assert not info.value.retryable and info.value.code is not None
    inits = [r for r in emu_control.requests(emu.workspace_id) if r["path"] == "/v2/init"]
    assert len(inits) == 1

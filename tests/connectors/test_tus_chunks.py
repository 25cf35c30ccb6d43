"""tus PATCH sizes: doubled while the link holds, the first again after a failure, under a body limit."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.sources import LocalFileSource
from videoferry.connectors.tus import TusUpload
from videoferry.connectors.tus_chunks import GROW_SECONDS, BodyCap, ChunkSizer
from videoferry.emulator.control import EmulatorControl, Workspace

KIB = 1024
FIRST, MOST = 16 * KIB, 128 * KIB


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(
        emu.base_url,
        emu.upload_url,
        emu.token,
        limiter=limiter,
        retry=RetryPolicy(initial_wait=0.01, max_wait=0.05),
    ) as c:
        yield c
    limiter.close()


@pytest.fixture()
def blob(tmp_path: Path) -> Path:
    path = tmp_path / "blob.bin"
    path.write_bytes(os.urandom(1000 * KIB))
    return path


def upload(
    client: VideoClient, emu: Workspace, tus: TusUpload, path: Path, title: str, on_progress: Any = None
) -> str:
    source = LocalFileSource(path)
    session = client.uploads.create_video(parent_id=emu.project_id, title=title, filesize=source.size)
    sent = tus.upload(session.endpoint, source, fresh_filesize=source.size, on_progress=on_progress)
    assert sent == source.size
    return session.id


def patches(control: EmulatorControl, emu: Workspace, since: int = 0) -> list[dict]:
    return [r for r in control.requests(emu.workspace_id) if r["method"] == "PATCH"][since:]


def acknowledged_sizes(log: list[dict], size: int) -> list[int]:
    """The body sizes of the PATCHes answered 204, from their offsets (the last one runs to the end)."""
    offsets = [int(r["upload_offset"]) for r in log if r["status"] == 204]
    return [b - a for a, b in zip(offsets, [*offsets[1:], size], strict=True)]


def stored_md5(control: EmulatorControl, emu: Workspace, video_id: str) -> str:
    return str(next(v for v in control.videos(emu) if v["id"] == video_id)["md5"])


def test_the_sizer_doubles_while_quick_and_falls_back_after_a_failure() -> None:
    chunks = ChunkSizer(FIRST, MOST)
    sizes = []
    for _ in range(6):
        sizes.append(chunks.next(10 * MOST))
        chunks.went_through(sizes[-1], 0.1)
    assert sizes == [FIRST, 2 * FIRST, 4 * FIRST, MOST, MOST, MOST]
    chunks.failed(MOST)
    assert chunks.next(10 * MOST) == FIRST
    for _ in range(5):
        chunks.went_through(chunks.next(10 * MOST), 0.1)
    assert chunks.next(10 * MOST) == MOST // 2  # this upload grows no further than half the failed size
    slow = ChunkSizer(FIRST, MOST)
    slow.went_through(FIRST, GROW_SECONDS + 1)  # a slow link keeps its chunk
    assert slow.next(10 * MOST) == FIRST
    assert slow.next(100) == 100  # never past what is left
    assert ChunkSizer(4 * MOST, MOST).next(10 * MOST) == 4 * MOST  # a first chunk above the ceiling stays


def test_a_413_is_learned_for_every_later_upload_of_the_uploader() -> None:
    cap = BodyCap()
    first = ChunkSizer(FIRST, MOST, cap)
    assert not first.too_large(FIRST)  # nothing smaller to try: the refusal stands
    assert first.too_large(4 * FIRST) and first.next(10 * MOST) == 2 * FIRST
    assert cap.refused == 4 * FIRST
    later = ChunkSizer(FIRST, MOST, cap)
    for _ in range(5):
        later.went_through(later.next(10 * MOST), 0.1)
    assert later.next(10 * MOST) == 2 * FIRST


def test_patches_grow_from_the_first_chunk_to_the_ceiling(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, blob: Path
) -> None:
    with TusUpload(chunk_size=FIRST, max_chunk_size=MOST) as tus:
        video_id = upload(client, emu, tus, blob, "grows")
    size = blob.stat().st_size
    sizes = acknowledged_sizes(patches(emu_control, emu), size)
    assert sizes[:5] == [FIRST, 2 * FIRST, 4 * FIRST, MOST, MOST]
    assert max(sizes) == MOST and sum(sizes) == size
    assert stored_md5(emu_control, emu, video_id) == hashlib.md5(blob.read_bytes()).hexdigest()


def test_a_cut_patch_sends_the_next_at_the_first_size_and_grows_no_further_than_half(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, blob: Path
) -> None:
    def cut_the_fourth(offset: int) -> None:
        # The fourth PATCH (the first at the ceiling) is cut a quarter in; the emulator keeps what arrived.
        if offset == 7 * FIRST:
            emu_control.set_faults(
                emu, [{"kind": "truncate_body", "method": "PATCH", "fraction": 0.25, "times": 1}]
            )

    with TusUpload(chunk_size=FIRST, max_chunk_size=MOST, initial_wait=0.01, max_wait=0.05) as tus:
        video_id = upload(client, emu, tus, blob, "cut", cut_the_fourth)
    log = patches(emu_control, emu)
    assert [r["dropped"] for r in log].count(True) == 1
    size = blob.stat().st_size
    cut = next(n for n, r in enumerate(log) if r["dropped"])
    assert log[cut]["upload_offset"] == 7 * FIRST  # the premise: the cut PATCH carried the ceiling's size
    after = acknowledged_sizes(log[cut + 1 :], size)
    assert after[0] == FIRST and max(after) == MOST // 2
    assert stored_md5(emu_control, emu, video_id) == hashlib.md5(blob.read_bytes()).hexdigest()


def test_a_host_refusing_large_bodies_gets_smaller_ones_and_the_uploader_remembers(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, blob: Path
) -> None:
    emu_control.set_variants(emu, ["patch-body-cap"], patch_body_cap=3 * FIRST)
    size = blob.stat().st_size
    with TusUpload(chunk_size=FIRST, max_chunk_size=MOST, initial_wait=0.01, max_wait=0.05) as tus:
        first = upload(client, emu, tus, blob, "capped")
        seen = len(patches(emu_control, emu))
        second = upload(client, emu, tus, blob, "capped again")
    log = patches(emu_control, emu)
    refused = [r for r in log[:seen] if r["status"] != 204]
    assert [r["status"] for r in refused] == [413]  # the 64 KiB body once; then 32 KiB ones
    assert max(acknowledged_sizes(log[:seen], size)) == 2 * FIRST
    assert all(r["status"] == 204 for r in log[seen:])  # the second upload never sends a refused size
    assert max(acknowledged_sizes(log[seen:], size)) == 2 * FIRST
    digest = hashlib.md5(blob.read_bytes()).hexdigest()
    assert stored_md5(emu_control, emu, first) == stored_md5(emu_control, emu, second) == digest

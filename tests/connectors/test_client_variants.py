"""The client against services that choose otherwise where the spec is silent (emulator variants)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from connectors.client import VideoClient
from connectors.errors import UnknownOutcomeError
from connectors.ids import normal_id
from connectors.limiter import ApiRateLimiter
from connectors.models import Video
from connectors.retry import RetryPolicy
from connectors.sources import LocalFileSource
from connectors.tus import TusUpload
from emulator.control import EmulatorControl, Workspace
from tests.connectors.waiting import wait_terminal

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST) as c:
        yield c
    limiter.close()


def _done_video(client: VideoClient, emu: Workspace, clip: Path, title: str) -> Video:
    result = client.upload_single(parent_id=emu.project_id, title=title, source=LocalFileSource(clip))
    return wait_terminal(client, result.id)


def _calls(control: EmulatorControl, ws: Workspace, path_end: str) -> list[tuple[str, int]]:
    log = control.requests(ws.workspace_id)
    return [(r["method"], r["status"]) for r in log if r["path"].endswith(path_end)]


@pytest.mark.parametrize(
    ("variant", "operation", "path_end", "refused"),
    [
        ("update-put", "update_video", "", "PATCH"),
        ("move-put", "move_video", "/move", "POST"),
        ("copy-put", "copy_video", "/copy", "POST"),
        ("cut-put", "cut_video", "/cut", "POST"),
        ("concat-put", "concat_video", "/concat", "POST"),
        ("chapters-post", "set_chapters", "/chapters", "PUT"),
    ],
)
def test_a_405_teaches_the_other_method_once(
    variant: str,
    operation: str,
    path_end: str,
    refused: str,
    client: VideoClient,
    emu: Workspace,
    emu_control: EmulatorControl,
    sample_clip: Path,
) -> None:
    video = _done_video(client, emu, sample_clip, "methods")
    emu_control.set_variants(emu, [variant])
    calls = {
        "update_video": lambda: client.update_video(video.id, title="renamed"),
        "move_video": lambda: client.move_video(video.id, emu.project_id, emu.folder_id),
        "copy_video": lambda: client.copy_video(video.id),
        "cut_video": lambda: client.cut_video(video.id, trim=[(0.0, 0.5)]),
        "concat_video": lambda: client.concat_video(video.id, append=[video.id]),
        "set_chapters": lambda: client.set_chapters(video.id, [(0, "Start")]),
    }
    calls[operation]()
    wait_terminal(client, video.id)
    calls[operation]()  # the learned method is used at once
    other = "PUT" if refused != "PUT" else "POST"
    assert client.methods()[operation] == other
    suffix = f"/v1/videos/{video.id}{path_end}"
    seen = _calls(emu_control, emu, suffix)
    mine = [(m, s if s == 405 else s // 100 * 100) for m, s in seen if m in (refused, other)]
    assert mine == [(refused, 405), (other, 200), (other, 200)]  # one refusal, then the learned method


def test_answers_without_a_body(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "bodies")
    emu_control.set_variants(emu, ["empty-bodies"])
    moved = client.move_video(video.id, emu.project_id, emu.folder_id)  # in place: read again
    assert moved.id == video.id and moved.folder_id == emu.folder_id
    before = len(emu_control.videos(emu))
    with pytest.raises(UnknownOutcomeError) as caught:
        client.copy_video(video.id)  # a create with no answer: look it up, never repeat it
    assert caught.value.cause_kind == "no_body"
    assert len(emu_control.videos(emu)) == before + 1
    emu_control.set_variants(emu, ["id-only-bodies"])
    copy = client.copy_video(video.id)
    assert copy.id != video.id and copy.title == "bodies" and copy.status is not None


def test_cut_making_a_new_video_is_answered_as_that_video(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "cut me")
    emu_control.set_variants(emu, ["cut-new-video"])
    result = client.cut_video(video.id, trim=[(0.0, 0.5)])
    assert result.id != video.id  # the caller sees which happened
    assert wait_terminal(client, result.id).duration == pytest.approx(0.5, abs=0.1)
    assert client.get_video(video.id).duration == pytest.approx(video.duration or 0, abs=0.01)


@pytest.mark.parametrize("variant", ["ids-undashed", "ids-upper", "ids-base58"])
def test_ids_in_any_notation_come_back_in_one_form(
    variant: str, client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, [variant])
    video = _done_video(client, emu, sample_clip, "ids")
    assert video.id == normal_id(video.id) and video.project_id == normal_id(emu.project_id)
    listed = list(client.scan_videos(project_id=emu.project_id, title="ids"))
    assert [v.id for v in listed] == [video.id]


@pytest.mark.parametrize(("variant", "sign"), [("clock-ahead", 1), ("clock-behind", -1)])
def test_the_service_clock_is_learned(
    variant: str, sign: int, client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, [variant, "whole-seconds"])
    before = datetime.now(UTC)
    session = client.init_upload(parent_id=emu.project_id, title="clock", filesize=10)
    offset = client.clock.offset()
    assert offset is not None and abs(offset - sign * 600) <= 2.0
    created = client.get_video(session.id).created_at
    assert created is not None and created.microsecond == 0
    assert abs((created - client.clock.to_service(before)).total_seconds()) <= 3.0
    assert abs((created - before).total_seconds() - sign * 600) <= 3.0


def test_scan_checks_ignored_filters_and_walks_capped_pages_without_a_total(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, ["ignore-title-filter", "ignore-parent-filter", "page-cap-10", "no-total"])
    for n in range(23):
        parent = emu.folder_id if n % 2 else emu.project_id
        client.init_upload(parent_id=parent, title=f"t{n % 3}", filesize=10)
    found = list(client.scan_videos(folder_id=emu.folder_id, title="t1"))
    assert sorted(v.title for v in found) == ["t1"] * 4 and all(v.folder_id == emu.folder_id for v in found)
    assert len(list(client.iter_videos())) == 23
    newest = list(client.scan_videos(newer_than=datetime.now(UTC) + timedelta(hours=1)))
    assert newest == []


def test_headers_read_as_utf8_keep_titles_exact_through_the_placeholder(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["headers-utf8"])
    clip = LocalFileSource(sample_clip)
    result = client.upload_single(parent_id=emu.project_id, title="Café crème", source=clip)
    assert result.title_pending
    client.update_video(result.id, title="Café crème")
    assert client.get_video(result.id).title == "Café crème"


def test_tus_counted_by_the_rate_limit_learns_to_pass_the_limiter(
    emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["tus-rate-limited"])
    emu_control.set_limits(emu, rate_per_second=3, rate_per_minute=300)
    limiter = ApiRateLimiter.memory(per_second=3, per_minute=300)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST)
    tus = TusUpload(chunk_size=4096, limiter=limiter)
    try:
        source = LocalFileSource(sample_clip)
        session = client.init_upload(parent_id=emu.project_id, title="counted", filesize=source.size)
        assert tus.upload(session.endpoint, source) == source.size
        assert tus.counted  # learned from a 429 of the upload address
        assert wait_terminal(client, session.id).status == "done"
    finally:
        tus.close()
        client.close()
        limiter.close()

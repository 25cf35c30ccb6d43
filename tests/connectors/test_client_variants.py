"""The client against services that choose otherwise where the spec is silent (emulator variants)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.connectors.waiting import wait_terminal
from videoferry.connectors.client import VideoClient
from videoferry.connectors.clock import ServiceClock
from videoferry.connectors.errors import NotFoundError, UnknownOutcomeError
from videoferry.connectors.ids import normal_id
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.models import Video
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.sources import LocalFileSource
from videoferry.connectors.tus import TusEndpointGoneError, TusUpload
from videoferry.connectors.webhook import WebhookReceiver
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST) as c:
        yield c
    limiter.close()


def _done_video(client: VideoClient, emu: Workspace, clip: Path, title: str) -> Video:
    result = client.uploads.single(parent_id=emu.project_id, title=title, source=LocalFileSource(clip))
    return wait_terminal(client, result.id)


def _calls(control: EmulatorControl, ws: Workspace, path_end: str) -> list[tuple[str, int]]:
    log = control.requests(ws.workspace_id)
    return [(r["method"], r["status"]) for r in log if r["path"].endswith(path_end)]


def _list_calls(control: EmulatorControl, ws: Workspace) -> int:
    return sum(
        1 for r in control.requests(ws.workspace_id) if r["path"] == "/v1/videos" and r["method"] == "GET"
    )


# -- methods the spec does not show -----------------------------------------------------------------------


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
    caplog: pytest.LogCaptureFixture,
) -> None:
    video = _done_video(client, emu, sample_clip, "methods")
    emu_control.set_variants(emu, [variant])
    calls: dict[str, Callable[[], object]] = {
        "update_video": lambda: client.videos.update(video.id, title="renamed"),
        "move_video": lambda: client.videos.move(video.id, emu.project_id, emu.folder_id),
        "copy_video": lambda: client.videos.copy(video.id),
        "cut_video": lambda: client.videos.cut(video.id, trim=[(0.0, 0.5)]),
        "concat_video": lambda: client.videos.concat(video.id, append=[video.id]),
        "set_chapters": lambda: client.videos.set_chapters(video.id, [(0, "Start")]),
    }
    before = len(emu_control.videos(emu))
    caplog.set_level(logging.INFO, logger="videoferry.connectors.methods")
    calls[operation]()
    wait_terminal(client, video.id)
    calls[operation]()  # the learned method is used at once
    other = "PUT" if refused != "PUT" else "POST"
    assert client.methods()[operation] == other
    suffix = f"/v1/videos/{video.id}{path_end}"
    seen = _calls(emu_control, emu, suffix)
    mine = [(m, s if s == 405 else s // 100 * 100) for m, s in seen if m in (refused, other)]
    assert mine == [(refused, 405), (other, 200), (other, 200)]  # one refusal, then the learned method
    assert len([r for r in caplog.records if "learned from a 405" in r.getMessage()]) == 1
    made = len(emu_control.videos(emu)) - before
    assert made == (2 if operation in ("copy_video", "concat_video") else 0)  # a 405 made nothing


def test_delete_by_post_is_learned_once(
    client: VideoClient,
    emu: Workspace,
    emu_control: EmulatorControl,
    sample_clip: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = _done_video(client, emu, sample_clip, "delete me")
    second = client.videos.copy(first.id)
    emu_control.set_variants(emu, ["delete-post"])
    caplog.set_level(logging.INFO, logger="videoferry.connectors.methods")
    client.videos.delete(first.id)
    client.videos.delete(second.id)  # the learned method at once
    assert client.methods()["delete_video"] == "POST"
    assert emu_control.videos(emu) == []
    paths = {f"/v1/videos/{first.id}", f"/v1/videos/{second.id}"}
    log = emu_control.requests(emu.workspace_id)
    deletes = [(r["method"], r["status"]) for r in log if r["path"] in paths and r["method"] != "GET"]
    assert deletes == [("DELETE", 405), ("POST", 200), ("POST", 200)]
    assert len([r for r in caplog.records if "learned from a 405" in r.getMessage()]) == 1
    with pytest.raises(NotFoundError):
        client.videos.delete(first.id)  # a first attempt's 404 is still a 404


def test_the_upload_method_is_learned_for_both_uploads(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["video-put"])
    first = client.uploads.single(
        parent_id=emu.project_id, title="put 1", source=LocalFileSource(sample_clip)
    )
    second = client.uploads.single(parent_id=emu.project_id, title="put 2", source=sample_clip.read_bytes())
    assert client.methods()["upload_single"] == "PUT" and client.methods()["import_url"] == "PUT"
    assert [m for m, _ in _calls(emu_control, emu, "/v2/video")] == ["POST", "PUT", "PUT"]
    stored = {v["id"]: v for v in emu_control.videos(emu)}
    assert {stored[first.id]["title"], stored[second.id]["title"]} == {"put 1", "put 2"}
    assert len(stored) == 2  # the refused POST made nothing


def test_a_fresh_client_under_every_method_variant(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "all methods")
    every = [
        "update-put",
        "move-put",
        "copy-put",
        "cut-put",
        "concat-put",
        "chapters-post",
        "video-put",
        "delete-post",
    ]
    emu_control.set_variants(emu, every)
    assert client.videos.update(video.id, title="still exact").title == "still exact"
    assert client.videos.move(video.id, emu.project_id, emu.folder_id).folder_id == emu.folder_id
    assert client.videos.set_chapters(video.id, [(1.5, "One")]).items[0].time == 1500
    assert client.videos.copy(video.id).id != video.id
    wait_terminal(client, video.id)
    assert client.videos.cut(video.id, trim=[(0.0, 0.5)]).id == video.id
    wait_terminal(client, video.id)
    joined = client.videos.concat(video.id, append=[video.id])
    assert joined.id != video.id
    client.uploads.single(parent_id=emu.project_id, title="up", source=sample_clip.read_bytes())
    client.videos.delete(joined.id)
    assert client.methods() == {
        "update_video": "PUT",
        "delete_video": "POST",
        "move_video": "PUT",
        "copy_video": "PUT",
        "cut_video": "PUT",
        "concat_video": "PUT",
        "set_chapters": "POST",
        "upload_single": "PUT",
        "import_url": "PUT",
    }
    refusals = [r for r in emu_control.requests(emu.workspace_id) if r["status"] == 405]
    assert len(refusals) == 8  # one per operation


# -- answers the spec does not show -----------------------------------------------------------------------


def test_answers_without_a_body(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "bodies")
    emu_control.set_variants(emu, ["empty-bodies"])
    moved = client.videos.move(video.id, emu.project_id, emu.folder_id)  # in place: read again
    assert moved.id == video.id and moved.folder_id == emu.folder_id
    cut = client.videos.cut(video.id, trim=[(0.0, 0.5)])
    assert cut.id == video.id and cut.version == (video.version or 0) + 1
    wait_terminal(client, video.id)
    for create in (
        lambda: client.videos.copy(video.id),
        lambda: client.videos.concat(video.id, append=[video.id]),
    ):
        before = len(emu_control.videos(emu))
        with pytest.raises(UnknownOutcomeError) as caught:
            create()  # a create with no answer: look it up, never repeat it
        assert caught.value.cause_kind == "no_body"
        assert len(emu_control.videos(emu)) == before + 1


def test_answers_with_only_an_id(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "ids only")
    emu_control.set_variants(emu, ["id-only-bodies"])
    copy = client.videos.copy(video.id)
    assert copy.id != video.id and copy.title == "ids only" and copy.status is not None
    moved = client.videos.move(video.id, emu.project_id, emu.folder_id)
    assert moved.id == video.id and moved.folder_id == emu.folder_id
    cut = client.videos.cut(video.id, trim=[(0.0, 0.5)])
    assert cut.id == video.id and cut.version == (video.version or 0) + 1
    wait_terminal(client, video.id)
    joined = client.videos.concat(video.id, append=[copy.id])
    assert joined.id not in (video.id, copy.id) and joined.project_id == emu.project_id


@pytest.mark.parametrize("bodies", [[], ["id-only-bodies"]])
def test_cut_making_a_new_video_is_answered_as_that_video(
    bodies: list[str], client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = _done_video(client, emu, sample_clip, "cut me")
    emu_control.set_variants(emu, ["cut-new-video", *bodies])
    result = client.videos.cut(video.id, trim=[(0.0, 0.5)])
    assert result.id != video.id  # the caller sees which happened
    assert wait_terminal(client, result.id).duration == pytest.approx(0.5, abs=0.1)
    assert client.videos.get(video.id).duration == pytest.approx(video.duration or 0, abs=0.01)


# -- identifiers, clock, headers --------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["ids-undashed", "ids-upper", "ids-base58"])
def test_ids_in_any_notation_come_back_in_one_form(
    variant: str, client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, [variant])
    session = client.uploads.create_video(parent_id=emu.folder_id, title="by tus", filesize=10)
    assert session.id == normal_id(session.id)
    result = client.uploads.single(parent_id=emu.project_id, title="ids", source=LocalFileSource(sample_clip))
    assert result.id == normal_id(result.id) and result.project_id == emu.project_id
    video = wait_terminal(client, result.id)
    assert video.id == result.id and video.project_id == emu.project_id
    assert video.assets and all(
        a.video_id == video.id and a.id == normal_id(a.id or "") for a in video.assets
    )
    listed = list(client.videos.scan(project_id=emu.project_id, title="ids"))
    assert [v.id for v in listed] == [video.id]
    in_folder = list(client.videos.scan(folder_id=emu.folder_id))
    assert [(v.id, v.folder_id) for v in in_folder] == [(session.id, emu.folder_id)]
    assert {v.id for v in client.videos.iter()} == {session.id, video.id}
    assert client.videos.copy(video.id, emu.folder_id).folder_id == emu.folder_id


@pytest.mark.parametrize(("variant", "sign"), [("clock-ahead", 1), ("clock-behind", -1)])
def test_the_service_clock_is_learned(
    variant: str, sign: int, client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, [variant, "whole-seconds"])
    assert client.clock.offset() is None
    before = datetime.now(UTC)
    session = client.uploads.create_video(parent_id=emu.project_id, title="clock", filesize=10)
    offset = client.clock.offset()
    assert offset is not None and abs(offset - sign * 600) <= 2.0 and client.clock.uncertainty() <= 1.0
    created = client.videos.get(session.id).created_at
    assert created is not None and created.microsecond == 0
    assert abs((created - client.clock.to_service(before)).total_seconds()) <= 3.0
    listed = list(client.videos.scan(title="clock", newer_than=created))
    assert [v.id for v in listed] == [session.id]


def test_the_clock_can_be_fed_created_at_without_date_headers(
    emu: Workspace, emu_control: EmulatorControl
) -> None:
    """What a caller does when no Date header is ever seen: observe the created_at of what it made."""
    emu_control.set_variants(emu, ["clock-behind"])
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory()) as c:
        before = datetime.now(UTC)
        session = c.uploads.create_video(parent_id=emu.project_id, title="no date", filesize=10)
        after = datetime.now(UTC)
        created = c.videos.get(session.id).created_at
        assert created is not None
        clock = ServiceClock()
        clock.observe(before, after, created)
        offset = clock.offset()
        assert offset is not None and abs(offset + 600) <= 2.0


def test_headers_read_as_utf8_keep_titles_exact_through_the_placeholder(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["headers-utf8"])
    clip = LocalFileSource(sample_clip)
    result = client.uploads.single(
        parent_id=emu.project_id, title="Café crème", source=clip, filename="café.mp4", description="naïve"
    )
    assert result.title_pending and result.pending_fields == ["title", "description"]
    client.videos.update(result.id, title="Café crème", description="naïve")
    video = client.videos.get(result.id)
    assert (video.title, video.description) == ("Café crème", "naïve")
    plain = client.uploads.single(parent_id=emu.project_id, title="Plain ~ title", source=clip)
    assert not plain.title_pending and client.videos.get(plain.id).title == "Plain ~ title"
    stored = "".join(str(v) for v in emu_control.videos(emu))
    assert "\ufffd" not in stored  # no header byte was misread


# -- lists ------------------------------------------------------------------------------------------------


def test_scan_checks_ignored_filters_and_walks_capped_pages_without_a_total(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, ["ignore-title-filter", "ignore-parent-filter", "page-cap-10", "no-total"])
    for n in range(23):
        parent = emu.folder_id if n % 2 else emu.project_id
        client.uploads.create_video(parent_id=parent, title=f"t{n % 3}", filesize=10)
    found = list(client.videos.scan(folder_id=emu.folder_id, title="t1"))
    assert [v.title for v in found] == ["t1"] * 4
    assert all(v.folder_id == emu.folder_id for v in found)
    assert len(list(client.videos.iter())) == 23


@pytest.mark.parametrize(
    ("variants", "count", "pages"), [(["page-cap-25"], 30, 2), (["page-cap-10", "no-total"], 20, 3)]
)
def test_capped_pages_are_walked_to_the_end(
    variants: list[str],
    count: int,
    pages: int,
    client: VideoClient,
    emu: Workspace,
    emu_control: EmulatorControl,
) -> None:
    emu_control.set_variants(emu, variants)
    made = {
        client.uploads.create_video(parent_id=emu.project_id, title=f"v{n}", filesize=10).id
        for n in range(count)
    }
    before = _list_calls(emu_control, emu)
    assert {v.id for v in client.videos.iter(order="created_at.asc")} == made
    assert _list_calls(emu_control, emu) - before == pages  # 20 without a total: 10, 10, then an empty page


def test_scan_stops_at_the_first_page_older_than_newer_than(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, ["page-cap-10", "no-total", "clock-ahead", "ignore-title-filter"])
    for _ in range(25):
        client.uploads.create_video(parent_id=emu.project_id, title="old", filesize=10)
    recent = [
        client.uploads.create_video(parent_id=emu.project_id, title="new", filesize=10).id for _ in range(4)
    ]
    bound = client.videos.get(recent[0]).created_at  # on the service's clock
    before = _list_calls(emu_control, emu)
    found = list(client.videos.scan(project_id=emu.project_id, newer_than=bound))
    assert [v.id for v in found] == recent[::-1]  # newest first, each once
    assert _list_calls(emu_control, emu) - before == 1  # the first page already reached older videos
    assert [v.id for v in client.videos.scan(title="new")] == recent[::-1]


def test_lagging_lists_show_new_videos_later(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, ["list-lag"], list_lag_seconds=1)
    session = client.uploads.create_video(parent_id=emu.project_id, title="lagging", filesize=10)
    assert client.videos.get(session.id).title == "lagging"  # GET sees it at once
    deadline = time.monotonic() + 15
    while not list(client.videos.scan(title="lagging")):
        assert time.monotonic() < deadline, "never listed"
        time.sleep(0.2)


# -- uploads ----------------------------------------------------------------------------------------------


def test_tus_counted_by_the_rate_limit_learns_to_pass_the_limiter(
    emu: Workspace, emu_control: EmulatorControl, sample_clip: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emu_control.set_variants(emu, ["tus-rate-limited"])
    emu_control.set_limits(emu, rate_per_second=3, rate_per_minute=300)
    limiter = ApiRateLimiter.memory(per_second=3, per_minute=300)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST)
    tus = TusUpload.from_transport(client.transport, chunk_size=4096, max_chunk_size=4096)
    caplog.set_level(logging.INFO, logger="videoferry.connectors.tus")
    try:
        source = LocalFileSource(sample_clip)
        session = client.uploads.create_video(parent_id=emu.project_id, title="counted", filesize=source.size)
        assert tus.upload(session.endpoint, source) == source.size
        assert tus.counted  # learned from a 429 of the upload address
        assert wait_terminal(client, session.id).status == "done"
        second = client.uploads.create_video(
            parent_id=emu.project_id, title="counted 2", filesize=source.size
        )
        # one uploader per session (apply)
        with TusUpload.from_transport(client.transport, chunk_size=4096, max_chunk_size=4096) as later:
            assert later.counted  # the run's limiter keeps what the first uploader learned
            assert later.upload(second.endpoint, source) == source.size
    finally:
        tus.close()
        client.close()
        limiter.close()
    log = emu_control.requests(emu.workspace_id)
    uploads = [r for r in log if r["host"] == "upload" and r["path"] not in ("/v2/init", "/v2/video")]
    assert len(uploads) > 2 * (source.size // 4096)
    assert [r["status"] for r in log].count(429) == 1  # the one that taught it; none after
    assert len([r for r in caplog.records if "counts upload requests" in r.getMessage()]) == 1
    assert session.endpoint not in caplog.text


def test_tus_without_the_variant_never_touches_the_limiter(
    emu: Workspace, client: VideoClient, sample_clip: Path
) -> None:
    limiter = ApiRateLimiter.memory(per_second=1, per_minute=1)
    tus = TusUpload(chunk_size=4096, limiter=limiter)
    try:
        source = LocalFileSource(sample_clip)
        session = client.uploads.create_video(parent_id=emu.project_id, title="free", filesize=source.size)
        assert tus.upload(session.endpoint, source) == source.size
        assert not tus.counted and limiter.try_acquire() and not limiter.try_acquire()  # one slot, unused
    finally:
        tus.close()
        limiter.close()


def test_an_expired_upload_address_is_gone(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["endpoint-expiry"], endpoint_ttl_seconds=0)
    source = LocalFileSource(sample_clip)
    session = client.uploads.create_video(parent_id=emu.project_id, title="expired", filesize=source.size)
    with TusUpload(chunk_size=4096) as tus, pytest.raises(TusEndpointGoneError) as caught:
        tus.upload(session.endpoint, source)
    assert caught.value.status == 404 and session.endpoint not in str(caught.value)


def test_init_answering_a_session_id(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    """The client reports what init answered; the caller learns with one GET that it is not the video."""
    emu_control.set_variants(emu, ["init-session-id"])
    session = client.uploads.create_video(parent_id=emu.project_id, title="session", filesize=10)
    assert session.id == normal_id(session.id)
    with pytest.raises(NotFoundError):
        client.videos.get(session.id)
    assert [v.title for v in client.videos.scan(title="session")] == ["session"]


def test_no_original_asset(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    emu_control.set_variants(emu, ["no-original"])
    video = _done_video(client, emu, sample_clip, "no original")
    assert video.assets and all(a.quality != "original" for a in video.assets)


# -- webhooks ---------------------------------------------------------------------------------------------


def test_webhooks_of_the_other_shape_are_understood(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl
) -> None:
    emu_control.set_variants(emu, ["webhook-alt-shape", "ids-base58"])
    emu_control.set_processing(emu, "manual")
    events: list[tuple[str, str, str | None]] = []
    invalid: list[str] = []
    with WebhookReceiver(on_event=lambda *e: events.append(e), on_invalid=invalid.append) as receiver:
        emu_control.set_webhook(emu, receiver.url)
        session = client.uploads.create_video(parent_id=emu.project_id, title="hooked", filesize=10)
        emu_control.set_video_status(emu, session.id, "error", "bad file")
        deadline = time.monotonic() + 10
        while ("error" not in [e[1] for e in events]) and time.monotonic() < deadline:
            time.sleep(0.05)
        emu_control.set_webhook(emu, None)
    assert (session.id, "error", "bad file") in events
    assert receiver.valid_events == len(events) and receiver.invalid_events == 0 and invalid == []

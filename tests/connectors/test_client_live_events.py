"""LiveEvents against the emulator: events (4.5), streams, recordings, QoS and chat after a broadcast."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.live_events import EventNotPendingError, LiveEvents
from videoferry.connectors.client.live_models import ChatMessage, LiveEvent, RestreamTarget
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.ids import to_base58
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


def make_transport(ws: Workspace, token: str | None = None) -> Transport:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    return Transport(ws.base_url, ws.upload_url, token or ws.token, limiter=limiter, retry=FAST)


@pytest.fixture()
def events(ws: Workspace) -> Iterator[LiveEvents]:
    transport = make_transport(ws)
    yield LiveEvents(transport)
    transport.close()


def wait_recording_done(events: LiveEvents, event_id: str, count: int) -> list:
    deadline = time.monotonic() + 60
    while True:
        videos = list(events.iter_recordings(event_id))
        if len(videos) >= count and all(v.status == "done" for v in videos):
            return videos
        assert time.monotonic() < deadline, [v.status for v in videos]
        time.sleep(0.1)


def test_create_defaults_get_and_repr(events: LiveEvents, ws: Workspace) -> None:
    start = datetime.now(UTC) + timedelta(days=1)
    event = events.create(
        "launch",
        "one-time",
        parent_id=to_base58(ws.folder_id),  # any notation is accepted; answers are normalised
        scheduled_time=start,
        record_parent_id=ws.project_id,
        presets=["360p", "720p"],
        reconnect_window=900,
        latency_mode="reduced",
    )
    assert event.name == "launch" and event.type == "one-time"
    assert event.parent_id == ws.folder_id and event.record is not None
    assert event.record.parent_id == ws.project_id
    assert event.scheduled_time is not None and abs(event.scheduled_time - start) < timedelta(seconds=1)
    assert event.stream is not None and event.stream.is_pending
    assert event.streamkey and event.rtmp_link and event.play_link
    assert event.poster is not None and event.poster.original
    assert event.auto_start is False and event.show_members is True and event.chat_after_stream is True
    assert event.model_extra is not None and event.model_extra.get("status") == "draft"  # unknown kept
    assert event.streamkey not in repr(event) and event.streamkey not in str(event)
    got = events.get(to_base58(event.id))
    assert got.id == event.id and got.presets == ["360p", "720p"] and got.reconnect_window == 900
    assert got.latency_mode == "reduced"


def test_create_refusals(events: LiveEvents, ws: Workspace) -> None:
    with pytest.raises(E.ValidationError) as bad_type:
        events.create("x", "weekly")
    assert bad_type.value.code == 400400 and [p["name"] for p in bad_type.value.invalid_params] == ["type"]
    with pytest.raises(E.ValidationError) as custom:
        events.create("x", "one-time", privacy_type="custom")
    assert "privacy_domains" in [p["name"] for p in custom.value.invalid_params]
    with pytest.raises(E.FolderNotFoundError):
        events.create("x", "one-time", parent_id="00000000-0000-4000-8000-000000000000")
    with pytest.raises(E.InvalidIdentifierError):
        events.get("not-an-id")
    with pytest.raises(E.NotFoundError):
        events.get("00000000-0000-4000-8000-000000000000")
    assert list(events.iter_events()) == []  # nothing was made


def test_list_pages_filters_and_order(events: LiveEvents, ws: Workspace) -> None:
    names = ["delta", "bravo", "echo", "alpha", "charlie"]
    made = [events.create(n, "recurring" if n < "c" else "one-time").id for n in names]
    page = events.list_events(per_page=2)
    assert len(page.items) == 2 and page.pagination.total == 5 and page.pagination.per_page == 2
    assert page.order == {"created_at": "desc"} and page.items[0].id == made[-1]
    walked = [e.id for e in events.iter_events(per_page=2)]
    assert sorted(walked) == sorted(made) and len(walked) == 5
    assert [e.name for e in events.iter_events(order="name.asc", per_page=2)] == sorted(names)
    assert {e.name for e in events.iter_events(type="recurring")} == {"alpha", "bravo"}
    assert list(events.iter_events(parent_id=ws.folder_id)) == []
    with pytest.raises(E.OrderFieldError):
        events.list_events(order="name.DESC")
    with pytest.raises(E.ValidationError):
        events.list_events(per_page=101)


def test_update_enable_complete_move_delete(events: LiveEvents, ws: Workspace) -> None:
    event = events.create("show", "one-time")
    updated = events.update(event.id, name="renamed", chat_active=True, privacy_share={"link_hash": "abc123"})
    assert updated.name == "renamed" and updated.chat_active is True and updated.type == "one-time"
    assert updated.privacy_share is not None and updated.privacy_share.link_hash == "abc123"
    assert updated.privacy_share.link and "abc123" in updated.privacy_share.link
    assert "abc123" not in repr(updated)
    with pytest.raises(ValueError):
        events.update(event.id)
    with pytest.raises(E.ValidationError) as both:
        events.update(event.id, privacy_share={"password": "pw-secret", "link_hash": "abc123"})
    assert "pw-secret" not in str(both.value)
    enabled = events.enable(event.id)
    assert enabled.model_extra is not None and enabled.model_extra["status"] == "enabled"
    moved = events.move(event.id, ws.folder_id)
    assert moved.parent_id == ws.folder_id
    with pytest.raises(E.FolderNotFoundError):
        events.move(event.id, "00000000-0000-4000-8000-000000000000")
    done = events.complete(event.id)
    assert done.model_extra is not None and done.model_extra["status"] == "completed"
    assert events.complete(event.id).id == event.id  # idempotent
    with pytest.raises(E.ValidationError):
        events.enable(event.id)  # a completed event cannot be enabled again
    events.delete(event.id)
    with pytest.raises(E.NotFoundError):
        events.get(event.id)
    with pytest.raises(E.NotFoundError):
        events.delete(event.id)


def test_streams_recordings_and_update_rules(
    events: LiveEvents, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = events.create("weekly", "recurring")
    first = event.stream
    assert first is not None
    when = datetime.now(UTC) + timedelta(hours=2)
    rescheduled = events.reschedule_stream(event.id, when)
    assert rescheduled.id == first.id and rescheduled.is_pending
    assert rescheduled.started_at is not None and abs(rescheduled.started_at - when) < timedelta(seconds=1)
    events.enable(event.id)  # the ingest takes streams of enabled events only
    emu_control.broadcast(ws, event.id, seconds=5)
    with pytest.raises(EventNotPendingError) as locked:
        events.update(event.id, name="too late")
    assert isinstance(locked.value, E.ValidationError) and locked.value.code == 400400
    assert "pending" in str(locked.value)
    with pytest.raises(E.ValidationError):
        events.reschedule_stream(event.id, when)  # nothing upcoming
    second = events.schedule_stream(event.id, when + timedelta(days=7))
    assert second.id != first.id and second.is_pending and second.event_id == event.id
    assert events.update(event.id, name="next week").name == "next week"  # pending again
    emu_control.broadcast(ws, event.id, seconds=5)
    recordings = wait_recording_done(events, event.id, 2)
    assert [v.meta["stream_id"] for v in recordings if v.meta] == [first.id, second.id]
    page = events.list_recordings(event.id, per_page=1, order="created_at.desc")
    assert page.pagination.total == 2 and [v.id for v in page.items] == [recordings[1].id]
    assert [v.id for v in events.iter_recordings(event.id, per_page=1)] == [v.id for v in recordings]
    single = events.create("once", "one-time")
    events.enable(single.id)
    emu_control.broadcast(ws, single.id, seconds=2)
    with pytest.raises(E.ValidationError):
        events.schedule_stream(single.id, when)  # a one-time event streams once


def test_qos_windows_and_errors(events: LiveEvents, ws: Workspace, emu_control: EmulatorControl) -> None:
    event = events.create("qos", "recurring")
    assert events.qos(event.id).session is None and events.qos(event.id).qos == []  # never ran
    events.enable(event.id)
    ran = emu_control.broadcast(ws, event.id, seconds=90)
    report = events.qos(event.id)
    assert report.session is not None and report.session.country == "US"
    assert len(report.qos) >= 3 and all(r.status == 0 and r.status_text == "normal" for r in report.qos)
    assert all(r.frame_rate == 30.0 and r.timestamp is not None for r in report.qos)
    hourly = events.qos(event.id, stream_id=ran["stream_id"], group_time="hour")
    assert 1 <= len(hourly.qos) <= 2
    minutes = events.qos(event.id, group_time=timedelta(minutes=1))
    assert 2 <= len(minutes.qos) <= 3
    samples = [r.timestamp for r in report.qos if r.timestamp is not None]
    # one 30 s bucket: its one sample lies in [start, start + 30 s), anywhere to the microsecond, and
    # `to` goes out in whole seconds, rounded up, inclusive: start + 29 s would miss a sample at 29.x s
    narrow = events.qos(event.id, from_=samples[1], to=samples[1] + timedelta(seconds=30, microseconds=-1))
    assert [r.timestamp for r in narrow.qos] == [samples[1]]
    today = datetime.now(UTC).date() - timedelta(days=1)  # a date is midnight UTC
    by_day = events.qos(event.id, from_=today, to=datetime.now(UTC) + timedelta(minutes=1))
    assert len(by_day.qos) == len(report.qos)
    capped = events.qos(event.id, from_=today, to=datetime.now(UTC) + timedelta(hours=13))
    assert len(capped.qos) == len(report.qos)  # the 12-hour cap counts back from the stream's end
    other = events.create("other", "one-time")
    with pytest.raises(E.NoSuchEntityError) as foreign:
        events.qos(other.id, stream_id=ran["stream_id"])
    assert foreign.value.code == 404404 and foreign.value.status == 404
    with pytest.raises(E.ValidationError) as bad_bucket:
        events.qos(event.id, group_time="fortnight")
    assert [p["name"] for p in bad_bucket.value.invalid_params] == ["group_time"]
    with pytest.raises(ValueError):
        events.qos(event.id, group_time=timedelta(0))


def test_chat_in_three_formats(events: LiveEvents, ws: Workspace, emu_control: EmulatorControl) -> None:
    event = events.create("talk", "one-time")
    events.enable(event.id)
    stream_id = emu_control.broadcast(ws, event.id, seconds=10, chat_messages=8)["stream_id"]
    messages = events.chat(event.id, stream_id)
    assert len(messages) == 8 and all(isinstance(m, ChatMessage) for m in messages)
    assert messages[0].is_admin is True and messages[1].is_admin is False
    assert messages[0].created_at is not None and messages[0].created_at_local == messages[0].created_at
    assert [m.message for m in messages] == [f"message {i}" for i in range(1, 9)]
    csv_text = events.chat_csv(event.id, stream_id)
    lines = csv_text.splitlines()
    assert lines[0].startswith("id,username") and len(lines) == 9
    txt = events.chat_txt(event.id, stream_id)
    assert txt.count("\n") == 8 and "viewer1: message 1" in txt
    assert events.chat_text(event.id, stream_id, "csv") == csv_text
    with pytest.raises(ValueError):
        events.chat_text(event.id, stream_id, "xml")
    other = events.create("other", "one-time")
    with pytest.raises(E.NotFoundError):
        events.chat(other.id, stream_id)
    with pytest.raises(E.NotFoundError):
        events.chat_txt(other.id, stream_id)
    silent = events.create("silent", "one-time")
    assert silent.stream is not None and events.chat(silent.id, silent.stream.id) == []


def test_scoped_token_is_denied(events: LiveEvents, ws: Workspace, emu_control: EmulatorControl) -> None:
    event = events.create("main", "one-time")
    other_project, _folder = emu_control.create_project(ws)
    token = emu_control.create_token(ws, project_ids=[other_project])
    transport = make_transport(ws, token)
    try:
        scoped = LiveEvents(transport)
        with pytest.raises(E.AccessDeniedError) as denied:
            scoped.get(event.id)
        assert denied.value.code == 100103
        assert list(scoped.iter_events()) == []  # hidden from the list
        mine = scoped.create("theirs", "one-time", parent_id=other_project)
        assert [e.id for e in scoped.iter_events()] == [mine.id]
    finally:
        transport.close()


def test_secrets_stay_out_of_logs_reprs_and_errors(
    events: LiveEvents, ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    password, restream_key = "pw-Zq81-never-seen", "rk-Zq81-never-seen"
    event = events.create(
        "secret",
        "one-time",
        privacy_share={"password": password},
        restreams=[RestreamTarget("yt", "rtmp://a.example/live", restream_key)],
    )
    assert event.privacy_share is not None and event.privacy_share.password == password
    assert event.restreams and event.restreams[0].key == restream_key
    streamkey = event.streamkey or ""
    texts = [repr(event), str(event), repr(events.get(event.id)), repr(list(events.iter_events()))]
    bad_key = "rk-bad-never-seen"
    failures: list[E.VideoApiError] = []
    for call in (
        lambda: events.update(event.id, privacy_share={"password": "x"}),  # too short: refused
        lambda: events.update(
            event.id, restreams=[RestreamTarget("yt", "http://not-rtmp.example/" + bad_key, bad_key)]
        ),
        lambda: events.create("s", "one-time", privacy_share={"password": password, "link_hash": "abc123"}),
    ):
        with pytest.raises(E.VideoApiError) as caught:
            call()
        failures.append(caught.value)
    for exc in failures:
        texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc)), str(exc.invalid_params)]
    ours = [r for r in caplog.records if not r.name.startswith(("videoferry.emulator", "uvicorn"))]
    texts += [f"{r.name} {r.getMessage()}" for r in ours]
    blob = "\n".join(texts)
    for secret in (password, restream_key, streamkey, bad_key, ws.token):
        assert secret and secret not in blob
    assert LiveEvent.model_validate(event.model_dump()).streamkey == streamkey  # still readable on purpose


def test_retries_follow_the_call_kind(
    events: LiveEvents, ws: Workspace, emu_control: EmulatorControl
) -> None:
    event = events.create("kinds", "recurring")
    emu_control.set_faults(
        ws,
        [
            {"kind": "error", "status": 503, "method": "GET", "path": "^/v2/live/events/", "times": 2},
            {"kind": "drop_after_commit", "method": "DELETE", "path": "^/v2/live/events/", "times": 1},
            {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/live/events$", "times": 1},
        ],
    )
    try:
        assert events.get(event.id).id == event.id  # two 503s, then the answer
        events.delete(event.id)  # deleted, answer lost, repeated: the 404 counts as done
        with pytest.raises(E.UnknownOutcomeError):
            events.create("maybe", "one-time")  # a create is never repeated
    finally:
        emu_control.clear_faults(ws)
    assert [e.name for e in events.iter_events()] == ["maybe"]


def test_the_client_object_carries_every_live_resource(ws: Workspace) -> None:
    from videoferry.connectors.client import VideoClient

    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    with VideoClient(ws.base_url, ws.upload_url, ws.token, limiter=limiter, retry=FAST) as client:
        event = client.live_events.create("via client", "one-time")
        assert client.restreams.list_restreams(event.id) == []
        assert list(client.unique_codes.iter_batches(event.id)) == []
        assert client.drm.find() is None and list(client.privacy_domains.iter_domains()) == []
        assert client.posters is not None and client.clock.offset() is not None  # the same transport

"""Restreams against the emulator (4.6): CRUD, the plain list, refusals, and the key kept secret."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator

import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.live_events import LiveEvents
from videoferry.connectors.client.live_models import RestreamTarget
from videoferry.connectors.client.live_support import REDACTED, redacting
from videoferry.connectors.client.restreams import Restreams
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.ids import to_base58
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)
KEY = "live_8842_restream-key-never-seen"


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


@pytest.fixture()
def transport(ws: Workspace) -> Iterator[Transport]:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    transport = Transport(ws.base_url, ws.upload_url, ws.token, limiter=limiter, retry=FAST)
    yield transport
    transport.close()


@pytest.fixture()
def event_id(transport: Transport) -> str:
    return LiveEvents(transport).create("show", "recurring").id


def test_create_list_get_update_delete(transport: Transport, event_id: str) -> None:
    restreams = Restreams(transport)
    assert restreams.list_restreams(event_id) == []
    made = restreams.create(event_id, RestreamTarget("youtube", "rtmp://a.example/live2", KEY))
    assert made.name == "youtube" and made.key == KEY and made.event_id == event_id
    assert made.enabled is True and made.description == "" and made.status == "disconnected"
    second = restreams.create(
        to_base58(event_id), RestreamTarget("twitch", "rtmps://b.example/app", "k2", "backup", False)
    )
    assert second.enabled is False and second.description == "backup"
    assert {r.id for r in restreams.list_restreams(event_id)} == {made.id, second.id}
    assert restreams.get(event_id, to_base58(made.id)) == made
    assert [r.id for r in restreams.find(event_id, "twitch")] == [second.id]
    changed = restreams.update(event_id, made.id, enabled=False, description="main")
    assert changed.enabled is False and changed.description == "main" and changed.key == KEY
    assert changed.name == "youtube" and changed.updated_at is not None
    event = LiveEvents(transport).get(event_id)
    assert event.restreams is not None and {r.id for r in event.restreams} == {made.id, second.id}
    restreams.delete(event_id, made.id)
    with pytest.raises(E.NotFoundError):
        restreams.get(event_id, made.id)
    with pytest.raises(E.NotFoundError):
        restreams.delete(event_id, made.id)
    assert [r.id for r in restreams.list_restreams(event_id)] == [second.id]


def test_refusals(transport: Transport, event_id: str) -> None:
    restreams = Restreams(transport)
    with pytest.raises(E.ValidationError) as bad_url:
        restreams.create(event_id, RestreamTarget("x", "http://a.example/live", KEY))
    assert [p["name"] for p in bad_url.value.invalid_params] == ["url"]
    with pytest.raises(E.ValidationError) as empty:
        restreams.create(event_id, RestreamTarget("", "rtmp://a.example/live", KEY))
    assert [p["name"] for p in empty.value.invalid_params] == ["name"]
    made = restreams.create(event_id, RestreamTarget("x", "rtmp://a.example/live", KEY))
    with pytest.raises(E.ValidationError):
        restreams.update(event_id, made.id, key="")
    with pytest.raises(ValueError):
        restreams.update(event_id, made.id)
    with pytest.raises(E.NotFoundError):
        restreams.list_restreams("00000000-0000-4000-8000-000000000000")
    with pytest.raises(E.InvalidIdentifierError):
        restreams.get(event_id, "nope")
    with pytest.raises(ValueError):
        restreams.get(event_id, "")


def test_the_key_stays_out_of_logs_reprs_and_errors(
    transport: Transport, event_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    restreams = Restreams(transport)
    target = RestreamTarget("yt", "rtmp://a.example/live", KEY)
    made = restreams.create(event_id, target)
    texts = [repr(target), str(target), repr(made), str(made), repr(restreams.list_restreams(event_id))]
    texts.append(repr(LiveEvents(transport).get(event_id)))
    bad = "bad-restream-key-never-seen"
    with pytest.raises(E.ValidationError) as refused:
        restreams.update(event_id, made.id, url="http://a.example/" + bad, key=bad)
    exc = refused.value
    texts += [str(exc), repr(exc), "".join(traceback.format_exception(exc)), str(exc.invalid_params)]
    ours = [r for r in caplog.records if not r.name.startswith(("videoferry.emulator", "uvicorn"))]
    texts += [f"{r.name} {r.getMessage()}" for r in ours]
    blob = "\n".join(texts)
    assert KEY not in blob and bad not in blob


def test_an_error_quoting_a_secret_is_blanked() -> None:
    # The service's error.detail may quote the rejected value (spec 7): the hook blanks it everywhere.
    exc = E.ValidationError(
        f"bad key {KEY}",
        status=400,
        code=400400,
        detail=f"rejected: {KEY}",
        invalid_params=[{"name": "key", "reason": "oneof", "message": f"not {KEY}"}],
    )
    assert redacting([KEY, None, "x"])(exc, 1) is None
    text = f"{exc} {exc!r} {exc.detail} {exc.invalid_params} {exc.args}"
    assert KEY not in text and REDACTED in str(exc) and exc.invalid_params[0]["name"] == "key"

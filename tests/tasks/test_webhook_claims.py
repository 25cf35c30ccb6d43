"""Webhooks are claims: polls slow down only once the service confirmed one; claims about videos the ledger
does not hold cost no call; a payload of an unknown shape changes nothing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.connectors.waiting import poll
from tests.flows.helpers import api_calls
from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.connectors.webhook import WebhookConfigError
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks.migrate.claims import Claims, start_webhooks
from videoferry.tasks.migrate.context import WEBHOOK_POLL_SECONDS, MigrateContext
from videoferry.tasks.migrate.readiness import Watcher
from videoferry.tasks.migrate.transfer import transfer_item


def _status(video_id: str, status: str) -> dict[str, Any]:
    return {"event": "media.update.status", "data": {"id": video_id, "status": status}}


def test_polls_slow_down_only_once_a_claim_is_confirmed(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    emu_control.set_processing(emu, "manual")
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    clip = clip_factory(0.5)
    ledger.plan([spec("a", 1, source=str(clip), title="a", parent_id=emu.project_id, via="tus")], run_id)
    receiver = start_webhooks(ctx, "127.0.0.1:0")
    emu_control.set_webhook(emu, receiver.url)
    try:
        assert transfer_item(ctx, "a") == "uploaded"
        video_id = ledger.get("a").video_id  # type: ignore[union-attr]
        assert video_id
        watcher, claims = Watcher(ctx), Claims(ctx)
        unknown = {"kind": "status-change", "payload": {"uuid": "x", "state": "done"}}
        assert httpx.post(receiver.url, json=unknown).status_code == 200
        claims.take()  # what the service sent about the upload so far
        claims.pending.clear()
        assert httpx.post(receiver.url, json=_status("0" * 32, "done")).status_code == 200
        before = len(api_calls(emu_control, emu))
        claims.take()
        assert claims.due(watcher)
        assert claims.confirm(watcher) == [] and ctx.claims_ignored == 1  # not ours: no call at all
        assert len(api_calls(emu_control, emu)) == before
        assert ctx.poll_every() == 5.0 and receiver.invalid_events == 1
        # A claim the service does not back (the video is still processing): the ledger takes what the
        # listing shows, never the claim.
        assert httpx.post(receiver.url, json=_status(video_id, "done")).status_code == 200
        claims.take()
        assert claims.confirm(watcher) == [("a", "uploaded", "processing")] and ctx.claims_refuted == 1
        assert ctx.poll_every() == 5.0
        # The service's own claim, once the video is done: confirmed; polls become the safety net.
        emu_control.set_video_status(emu, video_id, "done")

        def arrived() -> bool:
            claims.take()
            return bool(claims.pending)

        poll(arrived, 10, "the service's webhook")
        assert not claims.due(watcher, now=watcher.last_listing + 4.9)  # one listing per poll interval
        assert claims.confirm(watcher) == [("a", "processing", "done")] and ctx.claims_confirmed == 1
        assert ctx.poll_every() == WEBHOOK_POLL_SECONDS
    finally:
        receiver.stop()
        client.close()
        ledger.close()


def test_a_receiver_beyond_loopback_without_credentials_is_refused(
    tmp_path: Path, emu: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIDEOFERRY_WEBHOOK_USERNAME", raising=False)
    monkeypatch.delenv("VIDEOFERRY_WEBHOOK_PASSWORD", raising=False)
    ledger = Ledger.open(tmp_path / "l.db")
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=ledger.start_run("t", {}))
    try:
        with pytest.raises(WebhookConfigError, match="VIDEOFERRY_WEBHOOK_USERNAME"):
            start_webhooks(ctx, "0.0.0.0:0")
        assert ctx.webhooks is None
    finally:
        client.close()
        ledger.close()


def test_a_lost_done_webhook_costs_at_most_the_safety_net_poll_interval(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """Two videos done, the first one's `done` webhook lost: once the second's claim is confirmed polls
    become the safety net, and the next one comes WEBHOOK_POLL_SECONDS after the last listing, not later;
    it finds the first video done."""
    emu_control.set_processing(emu, "manual")
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    clips = [clip_factory(0.5, name="a.mp4"), clip_factory(0.6, name="b.mp4")]
    specs = [
        spec(k, n, source=str(c), title=k, parent_id=emu.project_id, via="tus")
        for n, (k, c) in enumerate(zip(("a", "b"), clips, strict=True), 1)
    ]
    ledger.plan(specs, run_id)
    receiver = start_webhooks(ctx, "127.0.0.1:0")
    emu_control.set_webhook(emu, receiver.url)
    try:
        assert [transfer_item(ctx, k) for k in ("a", "b")] == ["uploaded", "uploaded"]
        ids = {k: ledger.get(k).video_id for k in ("a", "b")}  # type: ignore[union-attr]
        watcher, claims = Watcher(ctx), Claims(ctx)
        emu_control.set_faults(emu, [emu_control.webhook_fault("webhook_lost", video_status="done", times=1)])
        emu_control.set_video_status(emu, ids["a"] or "", "done")  # its webhook is lost
        emu_control.set_video_status(emu, ids["b"] or "", "done")

        def confirmed() -> bool:
            claims.take()
            if claims.due(watcher):
                claims.confirm(watcher)
            return ctx.claims_confirmed == 1

        poll(confirmed, 30, "the second video's claim confirmed")
        assert ledger.get("a").state == "uploaded"  # type: ignore[union-attr]  # the claim was lost
        assert ctx.poll_every() == WEBHOOK_POLL_SECONDS
        watched = watcher.watched()
        assert [i.key for i in watched] == ["a"]
        since = max(watcher.last_poll, watcher.started)

        def due(at: float) -> bool:
            return watcher.due(lambda: watched, creates_left=lambda _: 0, uploading=False, now=since + at)

        assert not due(WEBHOOK_POLL_SECONDS - 1)  # the safety net, not a poll per interval
        assert due(WEBHOOK_POLL_SECONDS + 0.01)
        watcher.poll_once()
        assert ledger.get("a").state == "done"  # type: ignore[union-attr]
    finally:
        emu_control.clear_faults(emu)
        receiver.stop()
        client.close()
        ledger.close()


def test_a_claim_waits_for_a_full_page_while_creates_are_owed_never_past_its_bound(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """While many creates are owed a lone claim waits for a full page of them (a list now would take a
    create's slot), but never past Claims.wait_bound(); once nothing is owed it is confirmed at once."""
    emu_control.set_processing(emu, "manual")
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    ledger.plan([spec("a", 1, source=str(clip_factory(0.5)), title="a", parent_id=emu.project_id)], run_id)
    receiver = start_webhooks(ctx, "127.0.0.1:0")
    emu_control.set_webhook(emu, receiver.url)
    try:
        assert transfer_item(ctx, "a") == "uploaded"
        video_id = ledger.get("a").video_id  # type: ignore[union-attr]
        watcher, claims = Watcher(ctx), Claims(ctx)
        emu_control.set_video_status(emu, video_id or "", "done")

        def arrived() -> bool:
            claims.take()
            return bool(claims.pending)

        poll(arrived, 10, "the service's webhook")
        since = claims.since[video_id or ""]
        assert claims.wait_bound() == WEBHOOK_POLL_SECONDS + 5.0
        owed = 1000  # creates not made yet: more than a poll interval of them at the per-second limit

        def due(at: float, **kw: Any) -> bool:
            return claims.due(watcher, now=since + at, **kw)

        asked: list[int] = []

        def left(at_most: int) -> int:
            asked.append(at_most)
            return min(owed, at_most)

        assert not due(1.0, creates_left=left)
        # counted one past the larger of a poll interval of creates and the budget, not to the whole 1000
        limiter = ctx.client.transport.limiter
        assert asked == [max(math.ceil(limiter.per_second * ctx.poll_seconds()), limiter.budget()) + 1]
        assert asked[0] < owed
        assert not due(claims.wait_bound() - 0.01, creates_left=left)
        assert due(claims.wait_bound(), creates_left=left)  # the bound, whatever is owed
        assert due(1.0)  # nothing owed: at once
        # After the transfers, the only item has its claim: confirmed at once; the listing says done.
        assert due(1.0, quiet_from=since)
        assert claims.confirm(watcher) == [("a", "uploaded", "done")] and ctx.claims_confirmed == 1
    finally:
        receiver.stop()
        client.close()
        ledger.close()


def test_before_the_first_claim_polls_wait_one_interval_from_the_first_watched_video(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """With webhooks on, a poll before the first watched video has waited one poll interval could only learn
    what its webhook is about to say: polls wait that long, then poll as usual while no claim came; without a
    receiver they never wait."""
    emu_control.set_processing(emu, "manual")
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    ledger.plan(
        [spec("a", 1, source=str(clip_factory(0.5)), title="a", parent_id=emu.project_id, via="tus")], run_id
    )
    try:
        assert transfer_item(ctx, "a") == "uploaded"
        watcher, claims = Watcher(ctx), Claims(ctx)
        assert watcher.first_watched is None and watcher.watching() == 1
        first = watcher.first_watched
        assert first is not None
        assert not claims.hold_polls(watcher, now=first + 1.0)  # no receiver: polls as they come
        receiver = start_webhooks(ctx, "127.0.0.1:0")
        try:
            assert claims.hold_polls(watcher, now=first + 4.9)
            assert not claims.hold_polls(watcher, now=first + 5.01)  # no webhook yet: polling takes over
            claims.last_claim = first + 2.0  # a claim came (and was settled): the usual rules from then on
            assert not claims.hold_polls(watcher, now=first + 3.0)
        finally:
            receiver.stop()
    finally:
        client.close()
        ledger.close()

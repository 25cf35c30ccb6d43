"""Polls slow down for webhooks only once a valid one has arrived; a payload of an unknown shape does not."""

from __future__ import annotations

from pathlib import Path

import httpx

from connectors.client import VideoClient
from connectors.limiter import ApiRateLimiter
from connectors.tus import TusUpload
from emulator.control import Workspace
from state.ledger import Ledger
from tasks.migrate.context import WEBHOOK_POLL_SECONDS, MigrateContext
from tasks.migrate.readiness import start_webhooks


def test_polls_keep_their_interval_until_a_valid_webhook(tmp_path: Path, emu: Workspace) -> None:
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=5.0)
    receiver = start_webhooks(ctx, "127.0.0.1:0")
    try:
        assert ctx.poll_every() == 5.0
        unknown = {"kind": "status-change", "payload": {"uuid": "x", "state": "done"}}
        assert httpx.post(receiver.url, json=unknown).status_code == 200
        assert ctx.poll_every() == 5.0 and receiver.invalid_events == 1
        valid = {"event": "media.update.status", "data": {"id": "not-ours", "status": "done"}}
        assert httpx.post(receiver.url, json=valid).status_code == 200
        assert ctx.poll_every() == WEBHOOK_POLL_SECONDS
    finally:
        receiver.stop()
        client.close()
        ledger.close()

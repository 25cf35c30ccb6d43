"""The run's one probe of what init answers name (a GET of the first answer's id) holds up no other create:
while it is retried, the other creates send their inits, and its verdict gives their answers their ids."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from tests.fixtures.emulator import fast_polls
from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl
from videoferry.state.ledger import Ledger
from videoferry.state.models import Item
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.create import PROBED, create_item

#: A GET of one video answered 503 three times: the probe's fourth attempt is answered.
PROBE_FAILS = [{"kind": "error", "status": 503, "method": "GET", "path": "^/v1/videos/[^/]+$", "times": 3}]
#: The poll rule the probe's retries wait for (one GET of a video per 2 s): long enough for the other
#: creates' inits to go meanwhile, which the order of the request log shows (nothing here is timed).
POLL_RULE = 2.0
ITEMS = 6


def _item(ledger: Ledger, key: str) -> Item:
    item = ledger.get(key)
    assert item is not None
    return item


def _single_gets(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GETs of one video in a request log."""
    return [r for r in log if r["method"] == "GET" and r["path"].startswith("/v1/videos/")]


def test_other_creates_send_their_inits_while_the_probe_is_retried(
    tmp_path: Path, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """The first create's probe GET is answered 503 three times; the five creates started after its first
    failure all send their inits before the probe is answered, and once it is (init ids are video ids), each
    of them has its own video's id, one video per item."""
    ws = fast_polls(emu_control)
    emu_control.set_poll_rule(ws, POLL_RULE)
    ledger = Ledger.open(tmp_path / "l.db")
    run_id = ledger.start_run("test", {})
    clips = [clip_factory(0.4) for _ in range(ITEMS)]
    keys = [f"k{n}" for n in range(ITEMS)]
    ledger.plan(
        [
            spec(key, n + 1, source=str(clip), title=f"probe {key}", parent_id=ws.project_id)
            for n, (key, clip) in enumerate(zip(keys, clips, strict=True))
        ],
        run_id,
    )
    limiter = ApiRateLimiter.memory(per_second=10, per_minute=300)
    client = VideoClient(ws.base_url, ws.upload_url, ws.token, limiter=limiter)
    ctx = MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id)
    try:
        emu_control.set_faults(ws, PROBE_FAILS)
        first = threading.Thread(target=create_item, args=(ctx, _item(ledger, keys[0])), daemon=True)
        first.start()
        deadline = time.monotonic() + 30
        while not _single_gets(emu_control.requests(ws.workspace_id)):  # the probe's first attempt (503)
            assert time.monotonic() < deadline, "the first create sent no probe GET within 30 s"
            time.sleep(0.05)
        for key in keys[1:]:
            create_item(ctx, _item(ledger, key))
        first.join(timeout=60)
        assert not first.is_alive(), "the first create's probe did not end within 60 s"

        log = emu_control.requests(ws.workspace_id)
        inits = [n for n, r in enumerate(log) if r["method"] == "POST" and r["path"] == "/v2/init"]
        gets = [(n, r["status"]) for n, r in enumerate(log) if r in _single_gets(log)]
        answered = [n for n, status in gets if status == 200]
        assert [s for _, s in gets] == [503, 503, 503, 200], gets
        assert len(inits) == ITEMS and max(inits) < answered[0], (inits, gets)

        videos = {v["title"]: v["id"] for v in emu_control.videos(ws)}
        assert len(videos) == ITEMS, sorted(videos)
        for key in keys:
            item = _item(ledger, key)
            assert item.state == "uploading", (key, item.state)
            assert item.video_id == videos[f"probe {key}"], (key, item.video_id)
        with sqlite3.connect(tmp_path / "l.db") as conn:
            told = conn.execute("SELECT key FROM events WHERE message LIKE ?", (f"% {PROBED}",)).fetchall()
        assert sorted(k for (k,) in told) == keys  # each id recorded once the probe answered, said so
    finally:
        client.close()
        ledger.close()

"""A migration's schedule run in a test: items of one clip planned in a fresh ledger, and one transfer run
with a short settle time (the real one is 15 s)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.state.helpers import spec
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks import lookup, shared_listing
from videoferry.tasks.migrate import parked
from videoferry.tasks.migrate.context import MigrateContext
from videoferry.tasks.migrate.schedule import advance_items
from videoferry.tasks.migrate.transfer import transfer_batch


def planned_run(
    ledger_path: Path, ws: Workspace, clip: Path, count: int, *, per_second: int
) -> MigrateContext:
    """`count` items of `clip` (keys k00, k01..., titles "clip 0"...) planned under ws's project, and the
    run's context (its own client, the limiter at per_second and 300 a minute, polls every 0.2 s)."""
    ledger = Ledger.open(ledger_path)
    run_id = ledger.start_run("test", {})
    size = clip.stat().st_size
    rows = [
        spec(
            f"k{i:02d}", i + 1, source=str(clip), title=f"clip {i}", parent_id=ws.project_id, source_size=size
        )
        for i in range(count)
    ]
    ledger.plan(rows, run_id)
    limiter = ApiRateLimiter.memory(per_second=per_second, per_minute=300)
    client = VideoClient(ws.base_url, ws.upload_url, ws.token, limiter=limiter)
    return MigrateContext(client=client, tus=TusUpload(), ledger=ledger, run_id=run_id, poll_interval=0.2)


def run_with_settle(ctx: MigrateContext, monkeypatch: pytest.MonkeyPatch, settle: float) -> bool:
    """The run's schedule on one transfer until every item ends (True), lookups settling after `settle` s
    (parked items due on a grid of a quarter of it)."""
    monkeypatch.setattr(lookup, "SETTLE_SECONDS", settle)
    monkeypatch.setattr(shared_listing, "SETTLE_SECONDS", settle)
    monkeypatch.setattr(parked, "GRID", settle / 4)
    with ThreadPoolExecutor(1) as pool:
        return advance_items(
            ctx, lambda keys: pool.submit(transfer_batch, ctx, keys), transfers=1, wait_timeout=60.0
        )

"""The Prefect transfer task works from plain values alone: it opens its run's context itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.flows.helpers import clip_rows, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.errors import LedgerError
from videoferry.state.ledger import Ledger
from videoferry.state.machine import PLANNED
from videoferry.tasks.migrate import open_run
from videoferry.tasks.migrate.open_run import RunRef
from videoferry.tasks.migrate.plan import read_plan, store_plan


def test_the_task_body_opens_the_run_from_plain_values(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from videoferry.tasks.migrate.prefect_tasks import transfer_batch_task

    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    ledger = Ledger.open(tmp_path / "ledger.db")  # the run's own process: it holds the run, shares nothing
    run_id = ledger.start_run("migrate", {})
    store_plan(read_plan(str(inventory), parent_id=emu.project_id, via="auto", s3=None), ledger, run_id)
    keys = ledger.pending_keys([PLANNED])
    assert len(keys) == 3
    # The worker's environment has the token only: the addresses come with the arguments.
    for name in ("VIDEOFERRY_API_URL", "VIDEOFERRY_UPLOAD_URL", "VIDEOFERRY_LIMITER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    run: RunRef = {
        "ledger": str(tmp_path / "ledger.db"),
        "run_id": run_id,
        "api_url": emu.base_url,
        "upload_url": emu.upload_url,
        "rate_per_second": 10,
        "rate_per_minute": 300,
        "timeout": 30.0,
        "chunk_size": 1024 * 1024,
        "poll_interval": 5.0,
        "parent_id": emu.project_id,
        "s3_endpoint_url": None,
        "s3_region": None,
        "dask": None,
    }
    text = json.dumps(run)
    assert emu.token not in text
    try:
        counts = transfer_batch_task.fn(json.loads(text), keys)  # JSON as it is: nothing live crosses

        assert sum(counts.values()) == 3 and set(counts) <= {"uploaded", "processing", "done"}, counts
        assert all(item.state in ("uploaded", "processing", "done") for item in ledger.items())
        assert all(item.video_id for item in ledger.items())
        assert len(emu_control.videos(emu)) == 3

        # Opened once in this process and kept for the run's next batches; closed once the run is over.
        ctx = open_run.context_for(run)
        assert ctx is open_run.context_for(run) and ctx.ledger is not ledger
        ledger.finish_run(run_id, "succeeded")
        open_run.close_finished()
        with pytest.raises(LedgerError, match="closed"):
            ctx.ledger.counts()
        with pytest.raises(LedgerError, match="not running"):  # nothing opens a finished run again
            transfer_batch_task.fn(run, keys)
    finally:
        ledger.close()

"""Apply's rounds: a unit's end begins the next round at once (the next unit goes), not at the next tick."""

from __future__ import annotations

import concurrent.futures
import threading
from pathlib import Path
from typing import Any

from tests.flows.apply_fixtures import write_ops
from tests.flows.helpers import settings_for
from videoferry.connectors.operations import read_operations
from videoferry.emulator.control import Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks.apply.context import ApplyContext
from videoferry.tasks.apply.plan import resolve_plan
from videoferry.tasks.apply.schedule import advance_units, prepare
from videoferry.tasks.apply.unit import run_unit
from videoferry.tasks.apply.units import unit_plans
from videoferry.tasks.service import run_client

#: A tick no test waits out: a round that comes sooner came from a unit's end (or a stop).
LONG_TICK = 3600.0
#: The bound on the whole apply (a failure is a wait of a tick cut short, not a slow machine).
BOUND = 120.0


def test_a_units_end_starts_the_next_one_without_waiting_for_the_tick(
    tmp_path: Path, emu: Workspace, library: dict[str, Any]
) -> None:
    videos = library["videos"]
    ops = write_ops(
        tmp_path / "ops.csv",
        [{"op": "update", "id": f"u{n}", "target": video, "tags": f"round{n}"} for n, video in
         enumerate(videos.values())],
    )  # fmt: skip
    settings = settings_for(emu)
    ledger = Ledger.open(library["ledger"], create=False)
    client = run_client(settings, str(library["ledger"]))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    run_id = ledger.start_run("apply", {})
    ctx = ApplyContext(client=client, ledger=ledger, run_id=run_id, specs={})
    try:
        plan = resolve_plan(read_operations(str(ops)), ledger, client)
        ctx.specs = plan.specs
        plans, skipped = unit_plans(plan, ctx.specs, ledger.video_owners)
        assert not skipped and len(plans) == len(videos) == 3
        ledger.plan_units(plans, run_id)
        keys = {p.unit_key for p in plans}
        prepare(ctx, keys)
        result: list[bool] = []

        def units_in_rounds() -> None:
            submit = lambda unit: pool.submit(run_unit, ctx, unit)  # noqa: E731 - as the runner submits
            result.append(advance_units(ctx, submit, keys, transfers=1, tick=LONG_TICK))

        rounds = threading.Thread(target=units_in_rounds, daemon=True)
        rounds.start()
        rounds.join(timeout=BOUND)
        # one unit at a time: each after the first waited for a round, which only a unit's end could begin
        assert not rounds.is_alive(), "a round waited for the tick: a unit's end did not begin the next round"
        assert result == [True]
        assert {u.state for u in ledger.units() if u.unit_key in keys} == {"done"}
    finally:
        if not ctx.abort.is_set():
            ctx.abort(RuntimeError("the test is over"))  # ends the rounds' wait if they still wait
        pool.shutdown(wait=True, cancel_futures=True)
        ledger.finish_run(run_id, "done")
        ledger.close()
        client.close()

"""Seeded migrations under service variants, 5xx bursts, latency, lost answers, 429s, cut bodies; a rerun."""

from __future__ import annotations

import logging
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.chaos.checks import (
    assert_exactly_one_each,
    assert_no_duplicates,
    assert_settled,
    ledger_items,
    rate_figures,
)
from tests.chaos.harness import (
    CHAOS_HOOK_PASSWORD,
    CHAOS_HOOK_USER,
    FaultScript,
    chaos_items,
    chaos_prefect,
    chaos_rows,
    chaos_seeds,
    chaos_via,
    chaos_webhooks,
    describe_variants,
    draw_variants,
    write_rows,
)
from tests.flows.helpers import free_port, settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.flow import (
    run_flow,  # imported here: Prefect sets up its logging once, not mid-test
)
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import MigrateOutcome, run_migration

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

log = logging.getLogger(__name__)

#: Small first tus chunks (they double while PATCHes go through): a clip takes several PATCHes, so drops and
#: truncation on PATCH bite.
CHUNK = 8 * 1024


def _options(inventory: Path, ws: Workspace, ledger: Path, seed: int, listen: str | None) -> MigrateOptions:
    return MigrateOptions(
        inventory=str(inventory),
        parent_id=ws.project_id,
        ledger=str(ledger),
        transfers=4,
        wait_timeout=120.0,
        chunk_size=CHUNK,
        via=chaos_via(seed),
        webhook_listen=listen,
    )


def _migrate(opts: MigrateOptions, ws: Workspace, seed: int) -> MigrateOutcome:
    """One run, through the Prefect flow for the Prefect seed (its outcome read back), else plainly."""
    if not chaos_prefect(seed):
        return run_migration(opts, settings_for(ws))
    return run_flow(opts, api_url=ws.base_url, upload_url=ws.upload_url)


@pytest.mark.parametrize("seed", chaos_seeds())
def test_faulted_migration_then_clean_rerun(
    seed: int,
    tmp_path: Path,
    chaos_ws: Workspace,
    chaos_control: EmulatorControl,
    clip_factory,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if chaos_prefect(seed):
        request.getfixturevalue("prefect_harness")  # the real engine on a temporary local server
        monkeypatch.setenv("VIDEOFERRY_TOKEN", chaos_ws.token)  # the flow reads it from the environment
    rows = chaos_rows(clip_factory, chaos_items(seed), seed)
    inventory = write_rows(tmp_path / "inv.csv", rows)
    ledger = tmp_path / "ledger.db"
    variants, params = draw_variants(seed)
    chaos_control.set_variants(chaos_ws, variants, **params)
    log.warning(
        "chaos seed %d starts (%s%s%s, %d items, variants %s)",
        seed,
        chaos_via(seed),
        ", Prefect" if chaos_prefect(seed) else "",
        ", webhooks with every webhook fault" if chaos_webhooks(seed) else "",
        len(rows),
        describe_variants(variants, params),
    )
    listen = None
    if chaos_webhooks(seed):  # statuses by webhook, with credentials; the webhook faults drawn too
        port = free_port()
        monkeypatch.setenv("VIDEOFERRY_WEBHOOK_USERNAME", CHAOS_HOOK_USER)
        monkeypatch.setenv("VIDEOFERRY_WEBHOOK_PASSWORD", CHAOS_HOOK_PASSWORD)
        url = f"http://127.0.0.1:{port}/"
        chaos_control.set_webhook(chaos_ws, url, username=CHAOS_HOOK_USER, password=CHAOS_HOOK_PASSWORD)
        listen = f"127.0.0.1:{port}"
    runs = [time.time()]  # when each run started (the rate check needs them under tus-rate-limited)
    started = runs[0]
    with FaultScript(chaos_control, chaos_ws, seed, webhooks=listen is not None):
        faulted = _migrate(_options(inventory, chaos_ws, ledger, seed, listen), chaos_ws, seed)
    faulted_seconds = time.time() - started
    # Under faults: never a duplicate, every item accounted for with a reason.
    assert_no_duplicates(chaos_control, chaos_ws, ledger)
    counts = assert_settled(ledger)
    codes = Counter(
        f"{i.error_code}: {(i.error_message or '')[:90]}" for i in ledger_items(ledger) if i.error_code
    )
    assert sum(counts.values()) == len(rows)
    assert faulted.exit_code in (0, 1), faulted.reasons

    runs.append(time.time())
    clean = _migrate(_options(inventory, chaos_ws, ledger, seed, listen), chaos_ws, seed)
    assert clean.exit_code == 0, clean.reasons
    assert_exactly_one_each(chaos_control, chaos_ws, ledger, rows)
    figures = rate_figures(chaos_control, chaos_ws, variants=variants, runs=runs)
    log.warning(
        "chaos seed %d (%s%s, variants %s): %d items, faulted run %.1f s (%s, codes %s), total %.1f s, "
        "%d counted requests (%d to upload addresses), max %d/s, %d/min, %d answered 429",
        seed,
        chaos_via(seed),
        ", Prefect" if chaos_prefect(seed) else "",
        describe_variants(variants, params),
        len(rows),
        faulted_seconds,
        counts,
        dict(codes),
        time.time() - started,
        figures.calls,
        figures.uploads,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    figures.assert_inside_limits()

"""The command line SIGKILLed at seed-chosen points under variants and faults, restarted, then a clean run."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path

import pytest

from tests.chaos.checks import assert_exactly_one_each, assert_no_duplicates, rate_figures
from tests.chaos.harness import (
    FaultScript,
    chaos_items,
    chaos_prefect,
    chaos_rounds,
    chaos_rows,
    chaos_seeds,
    chaos_via,
    describe_variants,
    draw_variants,
    journal_rows,
    run_and_kill,
    write_rows,
)
from tests.flows.helpers import cli_argv, cli_env, migrate_args, run_cli
from videoferry.emulator.control import EmulatorControl, Workspace

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

log = logging.getLogger(__name__)


def _run_and_kill(
    cmd: list[str], env: dict[str, str], ledger: Path, rng: random.Random, n: int, runs: list[float]
) -> str:
    """Start the runner; SIGKILL it after a seed-chosen number of new transitions or delay. How it ended.

    Its start time is appended to `runs` (the rate check needs them under tus-rate-limited).
    """
    target = journal_rows(ledger, "transition") + rng.randint(1, 4 * n)
    delay = rng.uniform(2.0, 20.0)
    runs.append(time.time())
    return run_and_kill(cmd, env, lambda: journal_rows(ledger, "transition"), target, delay)


@pytest.mark.parametrize("seed", chaos_seeds())
def test_killed_runs_then_clean_rerun(
    seed: int, tmp_path: Path, chaos_ws: Workspace, chaos_control: EmulatorControl, clip_factory
) -> None:
    rows = chaos_rows(clip_factory, chaos_items(seed), seed)
    inventory = write_rows(tmp_path / "inv.csv", rows)
    ledger = tmp_path / "ledger.db"
    variants, params = draw_variants(seed + 1000)
    chaos_control.set_variants(chaos_ws, variants, **params)
    prefect = chaos_prefect(seed)  # one seed through the Prefect flow (--prefect), the others plainly
    args = migrate_args(chaos_ws, inventory, ledger, transfers=4, wait_timeout=300, prefect=prefect)
    args += ["--via", chaos_via(seed)]
    env = cli_env(chaos_ws)
    rng = random.Random(seed * 31 + 1)
    log.warning(
        "chaos kill seed %d starts (%s, %s, %d items, variants %s)",
        seed,
        chaos_via(seed),
        "Prefect" if prefect else "plain",
        len(rows),
        describe_variants(variants, params),
    )
    started = time.time()
    runs: list[float] = []
    endings = []
    with FaultScript(chaos_control, chaos_ws, seed):
        for _ in range(chaos_rounds()):
            endings.append(_run_and_kill(cli_argv(*args), env, ledger, rng, len(rows), runs))
            assert_no_duplicates(chaos_control, chaos_ws, ledger)
    runs.append(time.time())
    final = run_cli(args, env, timeout=600)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    assert_exactly_one_each(chaos_control, chaos_ws, ledger, rows)
    figures = rate_figures(chaos_control, chaos_ws, variants=variants, runs=runs)
    log.warning(
        "chaos kill seed %d (%s, %s, variants %s): %d items, %s, total %.1f s, %d counted requests (%d to "
        "upload addresses), max %d/s, %d/min, %d answered 429",
        seed,
        chaos_via(seed),
        "Prefect" if prefect else "plain",
        describe_variants(variants, params),
        len(rows),
        endings,
        time.time() - started,
        figures.calls,
        figures.uploads,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    figures.assert_inside_limits()

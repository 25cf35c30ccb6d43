"""Chaos for `videoferry apply`: every kind under the service's variants, faults and kill -9, exactly once
(a replace and the attachments by tus in 8 KiB chunks in the faulted run, in one chunk in the killed ones)."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path

import pytest

from tests.chaos.apply_harness import (
    ACTION_PATHS,
    CHUNK,
    assert_applied_once,
    assert_no_strays,
    chaos_operations,
    make_library,
)
from tests.chaos.checks import rate_figures
from tests.chaos.harness import (
    FaultScript,
    chaos_seeds,
    describe_variants,
    draw_variants,
    journal_rows,
    run_and_kill,
)
from tests.flows.helpers import cli_argv, cli_env, run_cli, settings_for
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

log = logging.getLogger(__name__)

#: Seeds of the apply chaos in `make test` (the first two of chaos_seeds()); `make chaos` runs them all.
DEFAULT_APPLY_SEEDS = 2


def apply_seeds() -> list[int]:
    """The seeds to run: all of chaos_seeds() when VIDEOFERRY_CHAOS_SEEDS is set, else the first two."""
    import os

    seeds = chaos_seeds()
    return seeds if "VIDEOFERRY_CHAOS_SEEDS" in os.environ else seeds[:DEFAULT_APPLY_SEEDS]


def _faults(control: EmulatorControl, ws: Workspace, seed: int) -> FaultScript:
    script = FaultScript(control, ws, seed)
    rng = random.Random(seed * 13 + 5)
    script.rules.append({"kind": "drop_after_commit", "path": ACTION_PATHS, "rate": rng.uniform(0.15, 0.35)})
    return script


def _options(ops: Path, ledger: Path) -> ApplyOptions:
    return ApplyOptions(
        ops=str(ops),
        ledger=str(ledger),
        allow_delete=True,
        transfers=4,
        wait_timeout=300,
        chunk_size=CHUNK,
    )


@pytest.mark.parametrize("seed", apply_seeds())
def test_faulted_apply_then_clean_rerun(
    seed: int, tmp_path: Path, chaos_ws: Workspace, chaos_control: EmulatorControl, clip_factory
) -> None:
    lib = make_library(tmp_path, chaos_control, chaos_ws, clip_factory)
    ops = chaos_operations(tmp_path / "ops.csv", lib, seed)
    variants, params = draw_variants(seed + 2000)
    chaos_control.set_variants(chaos_ws, variants, **params)
    started = time.time()
    with _faults(chaos_control, chaos_ws, seed):
        faulted = run_apply(_options(ops, lib.ledger), settings_for(chaos_ws))
    faulted_seconds = time.time() - started
    assert faulted.exit_code in (0, 1), faulted.reasons
    assert_no_strays(chaos_control, chaos_ws, lib.ledger)
    runs = [started, time.time()]  # each run learns anew whether upload requests count (tus-rate-limited)
    clean = run_apply(_options(ops, lib.ledger), settings_for(chaos_ws))
    assert clean.exit_code == 0, clean.reasons + clean.refused
    assert_applied_once(chaos_control, chaos_ws, lib)
    figures = rate_figures(chaos_control, chaos_ws, variants=variants, runs=runs)
    log.warning(
        "chaos apply seed %d (variants %s): faulted run %.1f s (%s), total %.1f s, %d counted requests, "
        "max %d/s, %d/min, %d answered 429",
        seed,
        describe_variants(variants, params),
        faulted_seconds,
        faulted.counts,
        time.time() - started,
        figures.calls,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    figures.assert_inside_limits()


def _run_and_kill(cmd: list[str], env: dict[str, str], ledger: Path, rng: random.Random) -> str:
    """Start `videoferry apply`; SIGKILL it after a seed-chosen number of journal rows or delay."""
    target = journal_rows(ledger, "unit", "op") + rng.randint(1, 60)
    return run_and_kill(cmd, env, lambda: journal_rows(ledger, "unit", "op"), target, rng.uniform(1.0, 12.0))


@pytest.mark.parametrize("seed", apply_seeds())
def test_killed_apply_runs_then_clean_rerun(
    seed: int, tmp_path: Path, chaos_ws: Workspace, chaos_control: EmulatorControl, clip_factory
) -> None:
    lib = make_library(tmp_path, chaos_control, chaos_ws, clip_factory)
    ops = chaos_operations(tmp_path / "ops.csv", lib, seed)
    variants, params = draw_variants(seed + 3000)
    chaos_control.set_variants(chaos_ws, variants, **params)
    args = [
        "apply", str(ops), "--no-prefect", "--allow-delete", "--ledger", str(lib.ledger),
        "--poll-interval", "5", "--transfers", "4",
    ]  # fmt: skip
    env = cli_env(chaos_ws)
    rng = random.Random(seed * 71 + 9)
    endings = []
    started = time.time()
    runs: list[float] = []  # when each process started: each learns anew whether upload requests count
    with _faults(chaos_control, chaos_ws, seed):
        for _ in range(3):
            runs.append(time.time())
            endings.append(_run_and_kill(cli_argv(*args), env, lib.ledger, rng))
            assert_no_strays(chaos_control, chaos_ws, lib.ledger)
    runs.append(time.time())
    final = run_cli(args, env, timeout=600)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    assert_applied_once(chaos_control, chaos_ws, lib)
    figures = rate_figures(chaos_control, chaos_ws, variants=variants, runs=runs)
    log.warning(
        "chaos apply kill seed %d (variants %s): %s, total %.1f s, %d counted requests, max %d/s, %d/min, "
        "%d answered 429",
        seed,
        describe_variants(variants, params),
        endings,
        time.time() - started,
        figures.calls,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    figures.assert_inside_limits()

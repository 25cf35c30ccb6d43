"""Chaos for `videoferry setup up`: a 40-room conference under faults and kill -9s, then a clean run:
every event, restream target, code batch and privacy domain exactly once, and no drift."""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.chaos.checks import rate_figures
from tests.chaos.harness import SETUP_ONLY, FaultScript, chaos_seeds, journal_rows, run_and_kill
from tests.flows.helpers import cli_argv, cli_env, run_cli, settings_for
from tests.flows.test_setup import SECRET_ENV, conference, write
from videoferry.connectors.client import VideoClient
from videoferry.connectors.client.live_models import LiveEvent
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.tasks.service import run_limiter

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

log = logging.getLogger(__name__)

ROOMS = 40
NEXT_STREAM = "2031-06-07T18:00:00Z"


@pytest.mark.parametrize("seed", chaos_seeds()[:1])
def test_killed_setup_runs_then_clean_run(seed: int, tmp_path: Path, chaos_control: EmulatorControl) -> None:
    variants = sorted(SETUP_ONLY) if seed % 2 else []  # the first batch resets privacy_share, or not
    ws: Workspace = chaos_control.create_workspace(rate_per_second=10, rate_per_minute=300, variants=variants)
    data = conference(ws, rooms=ROOMS)
    for event in data["events"][3::5]:  # rooms with codes and a share password: the share must hold
        event["privacy_share"] = {"password": "${ROOM_PW}"}
    for event in data["events"][
        ::5
    ]:  # weekly rooms: enabled by setup, their next stream scheduled after one ran
        event.update(type="recurring", state="enabled", next_stream=NEXT_STREAM)
    file = write(tmp_path / "conference.yaml", data)
    ledger = tmp_path / "setup.db"
    args = ["setup", "up", file, "--ledger", str(ledger), "--outputs", str(tmp_path / "out")]
    env = cli_env(ws, **SECRET_ENV)
    rng = random.Random(seed * 53 + 11)
    endings = []
    started = time.time()
    with FaultScript(chaos_control, ws, seed):
        for _ in range(3):
            target = journal_rows(ledger, "op") + rng.randint(5, 80)
            endings.append(
                run_and_kill(cli_argv(*args), env, lambda: journal_rows(ledger, "op"), target, 20.0)
            )
    final = run_cli(args, env, timeout=600)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    # The check's own calls share the run's budget (the limiter file beside the ledger): the service counts
    # them against the same token, right after the run's last calls.
    settings = settings_for(ws)
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger))) as client:
        events = list(client.live_events.iter_events(parent_id=ws.project_id))
        assert Counter(e.name for e in events) == Counter(f"Room {n:02d}" for n in range(ROOMS))
        for event in events:
            targets = [t.name for t in client.restreams.list_restreams(event.id)]
            assert len(targets) == len(set(targets)), (event.name, targets)
            batches = [b.name for b in client.unique_codes.iter_batches(event.id)]
            assert len(batches) == len(set(batches)), (event.name, batches)
            if int((event.name or "Room -1")[5:]) % 5 in (1, 3):  # the password holds beside the codes
                assert event.privacy_share is not None and event.privacy_share.password, event.name
        assert [d.domain for d in client.privacy_domains.iter_domains()] == ["conf.example.com"]
    drift = run_cli(["setup", "drift", file, "--ledger", str(ledger)], env, timeout=300)
    assert drift.returncode == 0, drift.stdout[-3000:]
    figures = rate_figures(chaos_control, ws)
    log.warning(
        "chaos setup seed %d (%s): %d rooms, %s, total %.1f s, %d counted requests, max %d/s, %d/min, %d 429",
        seed,
        ",".join(variants) or "no variant",
        ROOMS,
        endings,
        time.time() - started,
        figures.calls,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    for secret in SECRET_ENV.values():
        assert secret not in final.stdout + final.stderr + drift.stdout + drift.stderr
    figures.assert_inside_limits()
    weekly = [e for e in events if e.type == "recurring"]
    assert len(weekly) == ROOMS // 5
    _next_streams_once(chaos_control, ws, weekly, args, env, ledger, rng, seed)


def _next_streams_once(
    control: EmulatorControl,
    ws: Workspace,
    weekly: list[LiveEvent],
    args: list[str],
    env: dict[str, str],
    ledger: Path,
    rng: random.Random,
    seed: int,
) -> None:
    """The weekly rooms broadcast once (setup enabled them); their next streams scheduled under faults and
    kill -9s, then a clean run: each exactly once (a second broadcast leaves nothing pending)."""
    for event in weekly:
        control.broadcast(ws, event.id, seconds=1, qos=False)
    with FaultScript(control, ws, seed + 1):
        for _ in range(2):
            target = journal_rows(ledger, "op") + rng.randint(1, len(weekly))
            run_and_kill(cli_argv(*args), env, lambda: journal_rows(ledger, "op"), target, 20.0)
    final = run_cli(args, env, timeout=600)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    settings = settings_for(ws)
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger))) as client:
        for event in weekly:
            stream = client.live_events.get(event.id).stream
            assert stream is not None and stream.is_pending, event.name
            assert stream.started_at is not None and stream.started_at.isoformat().startswith("2031-06-07T18")
            assert control.broadcast(ws, event.id, seconds=1, qos=False)["stream_id"] == stream.id
            after = client.live_events.get(event.id).stream
            assert after is not None and not after.is_pending, (event.name, "a second next stream")
    drift = run_cli(["setup", "drift", str(args[2]), "--ledger", str(ledger)], env, timeout=300)
    assert drift.returncode == 0, drift.stdout[-3000:]

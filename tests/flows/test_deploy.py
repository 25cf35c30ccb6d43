"""prefect.yaml for real: a standalone Prefect server, a process work pool and worker, every deployment
deployed from the checkout, the migrate deployment run against the emulator, the schedules registered."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tests.flows.helpers import clip_rows, free_port, write_inventory

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))
POOL = "videoferry"


def _wait(check: Any, bound: float, what: str) -> Any:
    """Poll check() until it returns something true, at most `bound` seconds."""
    deadline = time.monotonic() + bound
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound:g} s")
        time.sleep(0.3)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture()
def prefect_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    """`prefect server start` on a loopback port with its own PREFECT_HOME; the environment to reach it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
    )
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait(lambda: _healthy(env["PREFECT_API_URL"]) or server.poll() is not None, 120, "the server")
        assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
        yield env
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _prefect(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PREFECT, "--no-prompt", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def _declared() -> dict[str, dict[str, Any]]:
    """The deployments prefect.yaml declares, by name."""
    document = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d for d in document["deployments"]}


def test_every_deployment_deploys_and_migrate_runs_on_a_worker(
    prefect_server: dict[str, str],
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
) -> None:
    env = prefect_server
    _prefect(env, "work-pool", "create", POOL, "--type", "process")
    _prefect(env, "deploy", "--all")

    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.objects import StateType

    with SyncPrefectClient(env["PREFECT_API_URL"]) as client:
        registered = {d.name: d for d in client.read_deployments()}
        declared = _declared()
        assert set(registered) == set(declared)
        for name, spec in declared.items():
            schedules = spec.get("schedules") or []
            wanted = [(s["cron"], s.get("timezone", "UTC"), s.get("active", True)) for s in schedules]
            got = [
                (getattr(s.schedule, "cron", None), getattr(s.schedule, "timezone", None), s.active)
                for s in registered[name].schedules
            ]
            assert got == wanted, (name, got)
            assert registered[name].work_pool_name == POOL

        worker_env = {
            **env,
            "VIDEOFERRY_HOME": str(ROOT),
            "VIDEOFERRY_TOKEN": emu.token,
            "VIDEOFERRY_API_URL": emu.base_url,
            "VIDEOFERRY_UPLOAD_URL": emu.upload_url,
        }
        worker_log = (tmp_path / "worker.log").open("w")
        worker = subprocess.Popen(
            [PREFECT, "worker", "start", "--pool", POOL, "--limit", "1"],
            env=worker_env,
            cwd=tmp_path,
            stdout=worker_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rows = clip_rows(clip_factory, 3, metadata=False)
            inventory = write_inventory(tmp_path / "inv.csv", rows)
            ledger = tmp_path / "ledger.db"
            run = client.create_flow_run_from_deployment(
                registered["migrate"].id,
                parameters={
                    "inventory": str(inventory),
                    "parent_id": emu.project_id,
                    "ledger": str(ledger),
                    "report_dir": str(tmp_path / "report"),
                    "poll_interval": 5.0,  # the spec's least: a deployment's parameters are checked too
                    "wait_timeout": 120.0,
                },
            )

            def final() -> Any:
                state = client.read_flow_run(run.id).state
                return state if state is not None and state.is_final() else None

            state = _wait(final, 300, "the migrate flow run")
            assert state.type == StateType.COMPLETED, (state, (tmp_path / "worker.log").read_text()[-3000:])
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
            worker_log.close()
    with Ledger.open(ledger, create=False) as book:
        assert {i.state for i in book.items()} == {"finished"}
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(r["title"] for r in rows)
    assert emu.token not in (tmp_path / "worker.log").read_text()

"""prefect.yaml for real: a standalone Prefect server, a process work pool and worker, every deployment
deployed from the checkout, the migrate deployment run against the emulator, the schedules registered."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tests.fixtures.prefect import PREFECT, wait_for
from tests.flows.deploy_fixtures import POOL, ROOT, _declared, _prefect
from tests.flows.helpers import clip_rows, write_inventory

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(600)]


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

            state = wait_for(final, 300, "the migrate flow run")
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

"""Ephemeral workers for real: prefect.yaml deployed on a standalone Prefect server, a process worker whose
working folder is wiped after every flow run, the ledger and every input in (moto) S3, the token only in a
Prefect Secret block; two nights of migrate and apply (the second does only the new work); then the flow runs
that must end Failed (a failed item, a failed operation, a busy ledger), with clean messages and artifacts
that name what failed."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.fixtures.prefect import PREFECT, wait_for
from tests.flows.apply_fixtures import wait_done
from tests.flows.deploy_fixtures import POOL, ROOT, _prefect
from tests.flows.helpers import clip_rows, creates, write_inventory
from tests.flows.remote_helpers import TEST_LEASE, replica
from videoferry.connectors.ledger_lease import Holder
from videoferry.connectors.ledger_remote import RemoteLedger, local_path
from videoferry.connectors.s3 import S3Config
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(900)]

TOKEN_BLOCK = "videoferry-token"


class Nights:
    """Flow runs of the deployments on the worker, each with a working folder wiped once it is over."""

    def __init__(self, client: Any, tmp: Path, s3_server: str) -> None:
        self.client = client
        self.tmp = tmp
        self.s3_server = s3_server
        self.deployments = {d.name: d for d in client.read_deployments()}
        self.runs = 0

    def run(self, name: str, parameters: dict[str, Any], ledger: str) -> Any:
        """One flow run of a deployment to its end: (its final state, its id). Its working folder (the
        remote ledger's local copy) existed during the run and is removed after it, as a new pod's disk."""
        self.runs += 1
        workdir = self.tmp / "work" / str(self.runs)
        run = self.client.create_flow_run_from_deployment(
            self.deployments[name].id,
            parameters=parameters,
            job_variables={"env": {"VIDEOFERRY_WORKDIR": str(workdir)}},
        )

        def final() -> Any:
            state = self.client.read_flow_run(run.id).state
            return state if state is not None and state.is_final() else None

        state = wait_for(final, 300, f"the {name} flow run")
        if ledger.startswith("s3://") and state.is_completed():
            assert local_path(ledger, workdir).exists()  # the run worked on a copy in its working folder
        shutil.rmtree(workdir, ignore_errors=True)  # the disk is gone with the pod
        return state, run.id

    def artifacts(self, run_id: Any) -> dict[str, str]:
        """The flow run's artifacts: key -> data as text."""
        answer = self.client._client.post(
            "/artifacts/filter",
            json={"artifacts": {"flow_run_id": {"any_": [str(run_id)]}}, "limit": 50, "offset": 0},
        )
        return {a["key"]: str(a["data"]) for a in answer.json() if a.get("key")}

    def logs(self, run_id: Any) -> str:
        """Every log line of the flow run, as the UI shows them."""
        answer = self.client._client.post(
            "/logs/filter", json={"logs": {"flow_run_id": {"any_": [str(run_id)]}}, "limit": 200, "offset": 0}
        )
        return "\n".join(line["message"] for line in answer.json())


def put(bucket: str, key: str, data: bytes) -> str:
    boto3.session.Session().client("s3", region_name="us-east-1").put_object(
        Bucket=bucket, Key=key, Body=data
    )
    return f"s3://{bucket}/{key}"


def s3_rows(bucket: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their clips moved into S3 (every input of the nightly runs lives there)."""
    moved = []
    for row in rows:
        local = Path(row["source"])
        moved.append({**row, "source": put(bucket, f"media/{local.name}", local.read_bytes())})
    return moved


def put_csv(bucket: str, key: str, tmp: Path, rows: list[dict[str, Any]]) -> str:
    path = write_inventory(tmp / Path(key).name, rows)
    return put(bucket, key, path.read_bytes())


@contextmanager
def worker(env: dict[str, str], tmp: Path) -> Iterator[Path]:
    """A process worker of the pool, one flow run at a time; its log file."""
    log_path = tmp / "worker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [PREFECT, "worker", "start", "--pool", POOL, "--limit", "1"],
            env=env,
            cwd=tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield log_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.long  # 105 s: make chaos runs it (make test keeps its time); test_deploy_install's run stays
def test_two_nights_on_ephemeral_workers_and_states_that_tell_the_truth(
    s3_server: str,
    s3_bucket: str,
    prefect_server: dict[str, str],
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
) -> None:
    from prefect.blocks.system import Secret
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env = prefect_server
    _prefect(env, "work-pool", "create", POOL, "--type", "process")
    _prefect(env, "deploy", "--all")
    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
        Secret(value=emu.token).save(TOKEN_BLOCK, overwrite=True)  # type: ignore[arg-type]
    worker_env = {
        **env,
        "VIDEOFERRY_HOME": str(ROOT),
        "VIDEOFERRY_API_URL": emu.base_url,
        "VIDEOFERRY_UPLOAD_URL": emu.upload_url,
        "VIDEOFERRY_LEDGER_LEASE": TEST_LEASE,
    }
    assert "VIDEOFERRY_TOKEN" not in worker_env  # the token only in the Secret block (prefect.yaml names it)
    assert emu.token not in str(worker_env)

    ledger = f"s3://{s3_bucket}/videoferry/ledger.db"
    rows = s3_rows(s3_bucket, clip_rows(clip_factory, 5, metadata=False))
    reports = f"s3://{s3_bucket}/videoferry/reports/"
    with worker(worker_env, tmp_path) as worker_log, SyncPrefectClient(env["PREFECT_API_URL"]) as client:
        nights = Nights(client, tmp_path, s3_server)

        def migrate(inventory_rows: list[dict[str, Any]]) -> list[str]:
            """One night's migrate run; the ledger's keys (read from S3) after it."""
            inventory = put_csv(s3_bucket, "nightly/inventory.csv", tmp_path, inventory_rows)
            params = {
                "inventory": inventory,
                "parent_id": emu.project_id,
                "ledger": ledger,
                "report_dir": reports + "migrate/",
                "poll_interval": 5.0,
                "wait_timeout": 120.0,
            }
            state, _ = nights.run("migrate", params, ledger)
            assert state.is_completed(), (state, worker_log.read_text()[-3000:])
            wait_done(emu_control, emu)
            return sorted(replica(ledger, s3_server, lambda book: [i.key for i in book.items()])[0])

        def apply(ops_rows: list[dict[str, Any]]) -> None:
            ops = put_csv(s3_bucket, "nightly/ops.csv", tmp_path, ops_rows)
            params = {"ops": ops, "ledger": ledger, "report_dir": reports + "apply/", "wait_timeout": 120.0}
            state, _ = nights.run("apply-nightly", params, ledger)
            assert state.is_completed(), (state, worker_log.read_text()[-3000:])

        keys = migrate(rows[:3])  # the first night
        first_ops = [{"op": "copy", "id": "night-1", "target": f"key:{keys[0]}", "parent_id": emu.project_id}]
        apply(first_ops)
        made_first = len(wait_done(emu_control, emu))
        assert made_first == 4  # three migrated, one copy

        mark = time.time()  # the second night: two new rows, one new operation
        keys = migrate(rows)
        second_ops = [
            *first_ops,
            {"op": "copy", "id": "night-2", "target": f"key:{keys[1]}", "parent_id": emu.project_id},
        ]
        apply(second_ops)
        assert len(creates(emu_control, emu, since=mark)) == 2  # only the new rows were uploaded
        copies = [
            r for r in emu_control.requests(emu.workspace_id, since=mark) if r["path"].endswith("/copy")
        ]
        assert len(copies) == 1  # only the new operation ran
        assert len(wait_done(emu_control, emu)) == made_first + 3
        finished, why = replica(ledger, s3_server, lambda book: book.counts().get("finished", 0))
        assert finished == 5 and why == ""
        reports_listed = (
            boto3.session.Session()
            .client("s3", region_name="us-east-1")
            .list_objects_v2(Bucket=s3_bucket, Prefix="videoferry/reports/")
        )
        names = {o["Key"] for o in reports_listed.get("Contents", [])}
        assert (
            "videoferry/reports/migrate/report.html" in names
            and "videoferry/reports/apply/report.html" in names
        )

        # -- a failed item: Failed, a clean message, the artifact names its source, code and message --------
        missing = f"s3://{s3_bucket}/media/missing.mp4"
        broken = [*rows, {"source": missing, "title": "Gone"}]
        params = {
            "inventory": put_csv(s3_bucket, "nightly/inventory.csv", tmp_path, broken),
            "parent_id": emu.project_id,
            "ledger": ledger,
            "report_dir": reports + "migrate/",
            "wait_timeout": 120.0,
        }
        state, run_id = nights.run("migrate", params, ledger)
        assert state.is_failed() and state.message.startswith("exit status 1: "), state
        outcome = nights.artifacts(run_id)["videoferry-outcome"]
        assert (
            missing in outcome and "s3://" + s3_bucket + "/videoferry/reports/migrate/report.html" in outcome
        )
        assert "| source | code | message |" in outcome
        logs = nights.logs(run_id)
        assert "Traceback" not in logs and "TypeError" not in logs

        # -- a failed operation -----------------------------------------------------------------------------
        nowhere = {"op": "copy", "id": "nowhere", "target": f"key:{keys[2]}", "parent_id": "0" * 32}
        ops = put_csv(s3_bucket, "nightly/ops.csv", tmp_path, [*second_ops, nowhere])
        params = {"ops": ops, "ledger": ledger, "report_dir": reports + "apply/", "wait_timeout": 60.0}
        state, run_id = nights.run("apply-nightly", params, ledger)
        assert state.is_failed() and state.message.startswith("exit status 1: "), state
        outcome = nights.artifacts(run_id)["videoferry-outcome"]
        assert f"copy key:{keys[2]}" in outcome
        logs = nights.logs(run_id)
        assert "Traceback" not in logs and "TypeError" not in logs

        # -- a busy ledger: exit status 2, the holder named, no traceback ----------------------------------
        holder = Holder(host="night-a", pid=4242, started="2026-01-01T02:00:00Z", run="migrate")
        with RemoteLedger.open(
            ledger,
            tmp_path / "holder",
            S3Config(endpoint_url=s3_server),
            holder=holder,
            prepare=lambda p: Ledger.open(p).close(),
        ):
            ops = put_csv(s3_bucket, "nightly/ops.csv", tmp_path, second_ops)
            params = {"ops": ops, "ledger": ledger, "report_dir": None}
            state, run_id = nights.run("apply-nightly", params, ledger)
        assert state.is_failed(), state
        busy = f"exit status 2: ledger {ledger} is in use by another run (host night-a"
        assert state.message.startswith(busy), state
        logs = nights.logs(run_id)
        assert "Traceback" not in logs and "TypeError" not in logs
        assert "night-a" in nights.artifacts(run_id)["videoferry-outcome"]
    worker_text = worker_log.read_text()
    assert emu.token not in worker_text

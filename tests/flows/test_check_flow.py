"""check through its Prefect flow on the real engine: a video that is done but does not play is a finding
with exit status 1, named in the run's artifacts (from the command line, videoferry.check() and a user's own
flow), without a secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from emulator.control import Workspace
from flows.migrate.runner import run_migration
from tests.flows.helpers import cli_env, options, run_cli, settings_for, write_inventory


def _migrated(tmp_path: Path, emu: Workspace, clip_factory: Any) -> Path:
    """Two platform items migrated: one whose video agrees with the platform's duration, one cut off."""
    rows = [
        {"key": "vimeo:2001", "source": str(clip_factory(2.0)), "title": "Whole", "duration": "2.0"},
        {"key": "vimeo:2002", "source": str(clip_factory(2.0)), "title": "Cut off", "duration": "0:01:00"},
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    return inventory


def _artifacts() -> dict[str, dict[str, Any]]:
    """The artifacts of the Prefect server: the latest of each key."""
    from prefect.client.orchestration import get_client

    body: dict[str, Any] = {"limit": 200, "offset": 0, "sort": "CREATED_DESC"}
    with get_client(sync_client=True) as client:
        found = client._client.post("/artifacts/filter", json=body).json()
    latest: dict[str, dict[str, Any]] = {}
    for artifact in found:
        latest.setdefault(artifact["key"], artifact)
    return latest


def _assert_names_the_unplayable(artifacts: dict[str, dict[str, Any]], emu: Workspace) -> None:
    summary = str(artifacts["videoferry-check-summary"]["data"])
    assert "1 migrated video(s) do not play" in summary
    assert "vimeo:2002" in summary and "Cut off" in summary and "the source's 60.00 s" in summary
    assert "vimeo:2001" not in summary  # plays: not a finding
    findings = artifacts["videoferry-check-findings"]["data"]
    assert "vimeo:2002" in str(findings) and "vimeo:2001" not in str(findings)
    outcome = str(artifacts["videoferry-outcome"]["data"])
    assert "| vimeo:2002 | playable |" in outcome
    assert "do not play" in outcome.splitlines()[0]  # the run's status line says why it failed
    dumped = "\n".join(str(a["data"]) for a in artifacts.values())
    assert emu.token not in dumped


@pytest.mark.flow
def test_check_playable_through_the_api_names_the_unplayable_video_in_artifacts(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    clip_factory: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect import flow
    from prefect.client.orchestration import get_client

    import videoferry

    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)

    inventory = _migrated(tmp_path, emu, clip_factory)
    ledger = str(tmp_path / "ledger.db")
    given: dict[str, Any] = {"ledger": ledger, "parent_id": emu.project_id}
    given.update(api_url=emu.base_url, upload_url=emu.upload_url)

    outcome = videoferry.check(str(inventory), prefect=True, playable=True, **given)
    assert outcome.exit_code == 1
    assert outcome.summary["not_playable"] == 1
    (line,) = [
        line for line in outcome.lines if line.key == "vimeo:2002"
    ]  # made again from the flow's result
    assert line.mark.value == "*" and "playable" in line.fields
    first = _artifacts()
    _assert_names_the_unplayable(first, emu)

    @flow(name="user-after-the-move")
    def after_the_move() -> int:
        return videoferry.check(str(inventory), playable=True, **given).exit_code  # a subflow

    state = after_the_move(return_state=True)
    assert state.is_completed() and state.result() == 1  # the user's flow decides what a finding means
    again = _artifacts()
    made = again["videoferry-check-summary"]
    assert made["id"] != first["videoferry-check-summary"]["id"]
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(made["flow_run_id"])
    assert run.parent_task_run_id is not None  # made by the check flow run as a subflow of the user's
    _assert_names_the_unplayable(again, emu)


@pytest.mark.flow
def test_check_playable_from_the_command_line_through_prefect(
    prefect_harness: None, tmp_path: Path, emu: Workspace, clip_factory: Any
) -> None:
    from prefect.settings import PREFECT_API_URL

    inventory = _migrated(tmp_path, emu, clip_factory)
    before = _artifacts().get("videoferry-check-summary", {}).get("id")
    env = cli_env(emu, PREFECT_API_URL=str(PREFECT_API_URL.value()), PREFECT_HOME=str(tmp_path / "home"))
    args = ["check", str(inventory), "--ledger", str(tmp_path / "ledger.db"), "--parent-id", emu.project_id]
    done = run_cli([*args, "--prefect", "--playable"], env, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said[-3000:]
    assert "through Prefect: flow run" in done.stderr  # a flow run of its own on the configured server
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("* vimeo:2002")]
    assert "differs in playable" in line
    assert "playable (--playable): 1 migrated video(s) do not play" in done.stdout
    made = _artifacts()
    assert made["videoferry-check-summary"]["id"] != before  # this run's
    _assert_names_the_unplayable(made, emu)
    assert emu.token not in said


@pytest.mark.flow
def test_a_check_flow_that_cannot_start_fails_saying_why(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.check.flow import check_flow

    for name in ("VIDEOFERRY_API_URL", "VIDEOFERRY_UPLOAD_URL", "VIDEOFERRY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    state = check_flow(inventory=str(tmp_path / "inv.csv"), ledger=str(tmp_path / "l.db"), return_state=True)
    assert state.is_failed()  # a configuration error: its message, not a summary it never made
    said = "missing configuration: set VIDEOFERRY_API_URL, VIDEOFERRY_UPLOAD_URL, VIDEOFERRY_TOKEN"
    assert state.message == f"exit status 2: {said}"

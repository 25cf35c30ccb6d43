"""apply_flow on the real Prefect engine against the emulator: the units done, the artifacts, no token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from tests.flows.apply_fixtures import write_ops
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger

ARTIFACT_KEYS = ("videoferry-operations", "videoferry-apply-summary")


def _artifacts(flow_run_id: UUID) -> list[Any]:
    """The artifacts of one flow run with apply's keys, read back through the Prefect client."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey
    from prefect.client.schemas.objects import Artifact

    only = ArtifactFilter(
        key=ArtifactFilterKey(any_=list(ARTIFACT_KEYS)),
        flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
    )
    # read_artifacts sends null sort / offset / flow_runs / task_runs, which this server refuses (422), and
    # empty filter objects match nothing on this Prefect version: send the artifact filter alone.
    body = {"artifacts": only.model_dump(mode="json", exclude_unset=True), "limit": 50, "offset": 0}
    with get_client(sync_client=True) as client:
        answer = client.request("POST", "/artifacts/filter", json={**body, "sort": "CREATED_DESC"})
    return [Artifact.model_validate(a) for a in answer.json()]


@pytest.mark.flow
def test_apply_flow_runs_on_prefect(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from videoferry.flows.apply.flow import apply_flow

    # The token only in the environment of the process running the flow; the URLs are flow parameters.
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    key, video = next(iter(library["keys"].items()))
    before = {v["id"] for v in emu_control.videos(emu)}
    chapters = json.dumps([{"time": "0:00", "title": "Start"}, {"time": 0.5, "title": "Half"}])
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "chapters", "id": "ch", "target": f"key:{key}", "chapters": chapters},
            {"op": "copy", "id": "cp", "target": "op:ch", "parent_id": library["project"]},
        ],
    )
    state = apply_flow(
        ops=str(ops),
        ledger=str(library["ledger"]),
        report_dir=str(tmp_path / "report"),
        poll_interval=5.0,  # the spec's least (a flow's parameters are checked like the command line's)
        wait_timeout=120.0,
        api_url=emu.base_url,
        upload_url=emu.upload_url,
        return_state=True,
    )
    assert state.is_completed(), state
    result = state.result()
    assert isinstance(result, dict)
    assert result["exit_code"] == 0, result["reasons"] + result["refused"]
    assert result["counts"] == {"done": 2}, result["counts"]
    assert result["report_files"] and all(Path(p).exists() for p in result["report_files"])

    with Ledger.open(library["ledger"], create=False) as book:
        units = {u.op_id: u for u in book.units()}
    assert set(units) == {"ch", "cp"}
    assert {u.state for u in units.values()} == {"done"}
    assert units["ch"].video_id == video
    by_id = {v["id"]: v for v in emu_control.videos(emu)}
    copied = units["cp"].result_id
    assert copied and copied not in before and copied in by_id  # a new video: the copy
    assert by_id[copied]["project_id"] == library["project"]
    assert [c["title"] for c in by_id[video]["chapters"]["items"]] == ["Start", "Half"]

    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    artifacts = _artifacts(flow_run_id)
    assert sorted(a.key for a in artifacts) == sorted(ARTIFACT_KEYS)
    (table,) = [a for a in artifacts if a.key == "videoferry-operations"]
    (summary,) = [a for a in artifacts if a.key == "videoferry-apply-summary"]
    assert table.type == "table" and summary.type == "markdown"
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert len(rows) == 2
    assert "2 done" in str(summary.data)
    dumped = "\n".join(f"{a.data}\n{a.description}" for a in artifacts)
    assert emu.token not in dumped


@pytest.mark.flow
def test_a_failed_operation_fails_the_flow_run_and_keeps_its_outcome(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from videoferry.flows.apply.flow import apply_flow
    from videoferry.flows.apply.runner import ApplyOutcome
    from videoferry.flows.prefect_job import JobFailed, outcome_of

    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    key = next(iter(library["keys"]))
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "update", "id": "ok", "target": f"key:{key}", "tags": "kept"},
            {"op": "update", "id": "gone", "target": "00000000-0000-0000-0000-000000000000", "tags": "x"},
        ],
    )
    state = apply_flow(
        ops=str(ops),
        ledger=str(library["ledger"]),
        poll_interval=5.0,  # the spec's least (a flow's parameters are checked like the command line's)
        api_url=emu.base_url,
        upload_url=emu.upload_url,
        return_state=True,
    )
    assert state.is_failed(), state  # a nightly deployment shows it
    assert "exit status 1" in (state.message or "")
    # Prefect resolves the failed run's data as its exception (a worker logs it), and the outcome reaches
    # the command line through it.
    with pytest.raises(JobFailed, match="exit status 1"):
        state.result()
    result = outcome_of(state, ApplyOutcome)
    assert (result.exit_code, result.counts) == (1, {"done": 1, "failed": 1})
    assert emu.token not in (state.message or "")

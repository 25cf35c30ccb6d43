"""The setup flows on the real Prefect engine: up, then the nightly drift check (Failed when it differs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.flows.test_setup import SECRET_ENV, conference, write


def _artifacts(flow_run_id: UUID) -> list[Any]:
    """The artifacts of one flow run, read back through the Prefect client (as test_apply_flow does)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.client.schemas.objects import Artifact

    only = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
    body = {"artifacts": only.model_dump(mode="json", exclude_unset=True), "limit": 50, "offset": 0}
    with get_client(sync_client=True) as client:
        answer = client.request("POST", "/artifacts/filter", json={**body, "sort": "CREATED_DESC"})
    return [Artifact.model_validate(a) for a in answer.json()]


@pytest.mark.flow
def test_up_then_nightly_drift_on_prefect(
    prefect_harness: None,
    tmp_path: Path,
    emu_control: EmulatorControl,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flows.prefect_job import outcome_of
    from flows.setup.flow import setup_drift_flow, setup_up_flow
    from flows.setup.runner import SetupOutcome

    ws: Workspace = emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)
    for name, value in {**SECRET_ENV, "VIDEOFERRY_TOKEN": ws.token}.items():
        monkeypatch.setenv(name, value)
    data = conference(ws, rooms=3)
    file = write(tmp_path / "c.yaml", data)
    common = {
        "file": file,
        "ledger": str(tmp_path / "l.db"),
        "api_url": ws.base_url,
        "upload_url": ws.upload_url,
    }

    up = setup_up_flow(**common, outputs=str(tmp_path / "out"), return_state=True)
    assert up.is_completed(), up
    result = up.result()
    assert isinstance(result, dict) and result["exit_code"] == 0
    assert setup_drift_flow(**common, return_state=True).is_completed()

    data["events"][0]["latency_mode"] = "reduced"
    write(tmp_path / "c.yaml", data)
    drift = setup_drift_flow(**common, return_state=True)
    assert drift.is_failed()
    outcome = outcome_of(drift, SetupOutcome)
    assert outcome.exit_code == 1 and "drift: the service differs from the file" in outcome.lines

    streamkeys = [
        line.rsplit(",", 1)[-1] for line in (tmp_path / "out" / "events.csv").read_text().splitlines()[1:]
    ]
    run_ids = [s.state_details.flow_run_id for s in (up, drift)]
    artifacts = [a for run in run_ids if run is not None for a in _artifacts(run)]
    assert {a.key for a in artifacts} >= {"videoferry-setup-up", "videoferry-setup-drift-summary"}
    dumped = "\n".join(f"{a.data}\n{a.description}" for a in artifacts)
    assert "latency_mode: standard -> reduced" in dumped
    assert not [s for s in [ws.token, *SECRET_ENV.values(), *streamkeys] if s in dumped]


@pytest.mark.flow
def test_a_secret_block_reference_resolves(prefect_harness: None, tmp_path: Path) -> None:
    from prefect.blocks.system import Secret

    from connectors.desired_state import SecretRef, load_desired_state
    from tasks.setup.compare import resolve_secret

    Secret(value="block-held-key-42").save("videoferry-test-yt-key", overwrite=True)  # type: ignore[arg-type]
    assert resolve_secret(SecretRef(block="videoferry-test-yt-key")) == "block-held-key-42"
    with pytest.raises(KeyError):
        resolve_secret(SecretRef(block="videoferry-no-such-block"))
    file = tmp_path / "s.yaml"
    file.write_text(
        "parent_id: p\nevents:\n  - name: A\n    type: one-time\n    restreams:\n"
        "      - {name: yt, url: 'rtmp://x', key: 'secret-block:videoferry-test-yt-key'}\n",
        encoding="utf-8",
    )
    (event,) = load_desired_state(file, resolve_secret).events
    assert event.restreams is not None and event.restreams[0].key == "block-held-key-42"

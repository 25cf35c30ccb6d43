"""A job's flow run emits Prefect events a team can automate on, read back from a real Prefect server:
started, finished with counts, a workspace refusal, failed items (bounded per run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from emulator.control import EmulatorControl, Workspace
from flows import events
from tests.flows.helpers import clip_rows, options, write_inventory

#: How long the server may take to store an emitted event (they travel over a websocket, then a queue).
EVENT_BOUND = 30.0


def _events(flow_run_id: str, want: int, *names: str) -> tuple[list[dict[str, Any]], int]:
    """The first 50 videoferry events (only `names`, when given) related to the flow run and how many there
    are, once at least `want` are stored (bounded wait)."""
    from prefect.client.orchestration import get_client

    chosen = {"name": list(names)} if names else {"prefix": ["videoferry."]}
    body = {
        "filter": {
            "event": chosen,
            "related": {"resources_in_roles": [[f"prefect.flow-run.{flow_run_id}", "flow-run"]]},
            "order": "ASC",
        },
        "limit": 50,  # the most the server sends at once; "total" counts them all
    }
    deadline = time.monotonic() + EVENT_BOUND
    found: list[dict[str, Any]] = []
    with get_client(sync_client=True) as client:
        while time.monotonic() < deadline:
            answer = client._client.post("/events/filter", json=body)
            answer.raise_for_status()
            found, total = answer.json()["events"], answer.json()["total"]
            if total >= want:
                return found, total
            time.sleep(0.2)
    raise AssertionError(f"{len(found)} of {want} events stored within {EVENT_BOUND} s: {found}")


@pytest.mark.flow
def test_a_refused_run_emits_started_refused_and_finished(
    prefect_on_emulator: Workspace,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
) -> None:
    from flows.migrate.flow import migrate_flow
    from flows.options import params

    emu_control.set_variants(emu, ["balance-empty"], refuse_after=2)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 4, metadata=False))
    state = migrate_flow(**params(options(inventory, emu, tmp_path, transfers=1)), return_state=True)
    assert state.is_failed()
    found, _ = _events(str(state.state_details.flow_run_id), 3)
    names = [e["event"] for e in found]
    assert names[0] == events.STARTED and names[-1] == events.FINISHED, names
    refused = [e for e in found if e["event"] == events.WORKSPACE_REFUSED]
    assert len(refused) == 1 and refused[0]["payload"]["code"] == "400207", refused
    finished = found[-1]
    assert finished["resource"]["prefect.resource.id"] == "videoferry.job.migrate"
    assert finished["resource"]["videoferry.outcome"] == "failed"
    assert finished["payload"]["exit_code"] == 1 and sum(finished["payload"]["counts"].values()) == 4
    assert emu.token not in str(found)


@pytest.mark.flow
def test_item_failures_are_emitted_up_to_the_bound(prefect_harness: None) -> None:
    from prefect import flow

    from flows.job import Outcome, failure
    from flows.prefect_job import job_flow

    many = events.MAX_ITEM_EVENTS + 7
    failed = [failure(f"s3://bucket/v{i}.mp4", "400101", "invalid source") for i in range(many)]

    @flow(name=f"videoferry-bounded-{uuid.uuid4().hex[:8]}")
    def bounded() -> Any:
        return job_flow(lambda: Outcome(exit_code=1, reasons=["not done"], failed=failed), Outcome)

    state: Any = bounded(return_state=True)
    assert state.is_failed()
    run_id = str(state.state_details.flow_run_id)
    _, total = _events(run_id, events.MAX_ITEM_EVENTS + 3)  # started, the items, more, finished
    assert total == events.MAX_ITEM_EVENTS + 3
    items, total = _events(run_id, 1, events.ITEM_FAILED)
    assert total == events.MAX_ITEM_EVENTS
    assert items[0]["payload"] == {
        "source": "s3://bucket/v0.mp4",
        "code": "400101",
        "message": "invalid source",
    }
    more, _ = _events(run_id, 1, events.ITEMS_FAILED_MORE)
    assert [m["payload"] for m in more] == [{"emitted": events.MAX_ITEM_EVENTS, "not_emitted": 7}]
    finished, _ = _events(run_id, 1, events.FINISHED)
    assert finished[0]["payload"]["failed"] == many


@pytest.mark.flow
def test_the_documented_automation_is_accepted(prefect_harness: None, tmp_path: Path) -> None:
    from prefect.blocks.notifications import SlackWebhook
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    page = (Path(__file__).resolve().parents[2] / "docs" / "prefect.md").read_text(encoding="utf-8")
    documented = re.search(r"^```json\n(.*?)^```", page, re.M | re.S)
    assert documented is not None
    slack = SlackWebhook(url=SecretStr("http://127.0.0.1:9/hook"))
    block_id = slack.save(f"slack-{uuid.uuid4().hex[:8]}")
    automation = json.loads(documented.group(1).replace("SLACK_BLOCK_ID", str(block_id)))
    (tmp_path / "slack.json").write_text(json.dumps(automation))
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "prefect",
            "automation",
            "create",
            "--from-file",
            str(tmp_path / "slack.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with get_client(sync_client=True) as client:
        made = [a for a in client.read_automations() if a.name == automation["name"]]
    assert len(made) == 1
    trigger = made[0].trigger
    assert getattr(trigger, "expect", None) == {events.FINISHED}

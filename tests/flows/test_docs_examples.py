"""The documentation's Python examples run as they are, in order, against the emulator and a real Prefect
server: docs/python-api.md and docs/blocks.md (their ```python blocks)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.flows.helpers import clip_rows, write_inventory

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def examples(page: str) -> list[str]:
    """The page's Python code blocks, in order."""
    return _BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


@pytest.mark.flow
def test_the_python_api_page_runs(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.client.orchestration import get_client

    monkeypatch.setenv("VIDEOFERRY_API_URL", emu.base_url)
    monkeypatch.setenv("VIDEOFERRY_UPLOAD_URL", emu.upload_url)
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    monkeypatch.setenv("PROJECT_ID", emu.project_id)
    monkeypatch.chdir(tmp_path)
    write_inventory(tmp_path / "inventory.csv", clip_rows(clip_factory, 2, metadata=False))
    blocks = examples("python-api.md")
    assert len(blocks) == 4
    for code in blocks:
        exec(compile(code, "docs/python-api.md", "exec"), {"__name__": "docs_example"})
    assert len(emu_control.videos(emu)) == 2  # the subflow's migration found everything done
    assert (tmp_path / "links.csv").read_text().count("\n") == 3  # a header and the two videos
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(limit=50)
        flows = {run.flow_id: client.read_flow(run.flow_id).name for run in runs}
    subflows = [flows[run.flow_id] for run in runs if run.parent_task_run_id is not None]
    assert "videoferry-migrate" in subflows, subflows  # the job ran as a subflow of the user's flow


@pytest.mark.flow
def test_the_blocks_page_runs(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VIDEOFERRY_API_URL", emu.base_url)
    monkeypatch.setenv("VIDEOFERRY_UPLOAD_URL", emu.upload_url)
    monkeypatch.setenv("VIDEOFERRY_TOKEN", emu.token)
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "")  # restored after the example sets it
    monkeypatch.setenv("PROJECT_ID", emu.project_id)
    monkeypatch.chdir(tmp_path)
    write_inventory(tmp_path / "inventory.csv", clip_rows(clip_factory, 1, metadata=False))
    blocks = examples("blocks.md")
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/blocks.md", "exec"), {"__name__": "docs_example"})
    assert len(emu_control.videos(emu)) == 1

"""Shared by the apply tests: an operations CSV writer, the CLI runner, and a migrated library to act on."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.flows.helpers import cli_env, clip_rows, run_cli, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger
from videoferry.tasks.service import run_limiter


def run_vf(args: list[str], ws: Workspace | None, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, cli_env(ws, **env), timeout=240)


def write_ops(path: Path, rows: list[dict[str, Any]]) -> Path:
    """An operations CSV with the union of the rows' columns (the inventory writer serves as it is)."""
    return write_inventory(path, rows)


def wait_done(control: EmulatorControl, ws: Workspace, bound: float = 60.0) -> list[dict[str, Any]]:
    """Every video of the workspace, once none is processing any more (bounded)."""
    deadline = time.monotonic() + bound
    while True:
        videos = control.videos(ws)
        if all(v["status"] in ("done", "error", "aborted") for v in videos) or time.monotonic() > deadline:
            return videos
        time.sleep(0.2)


@pytest.fixture()
def library(tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory) -> dict[str, Any]:
    """Two videos migrated for real (ledger with keys), three more uploaded into a second project."""
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    ledger = tmp_path / "ledger.db"
    done = run_vf(
        ["migrate", str(inventory), "--no-prefect", "--parent-id", emu.project_id, "--ledger", str(ledger)],
        emu,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with Ledger.open(ledger, create=False) as book:
        keys = {item.spec.key: item.video_id for item in book.items()}
    project, folder = emu_control.create_project(emu)
    uploaded: dict[str, str] = {}
    settings = settings_for(emu)
    # The migrate run's rate budget (the limiter file beside the ledger) counts these calls too.
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger))) as client:
        for title, parent in (("Intro A", project), ("Intro B", project), ("Outro", folder)):
            data = clip_factory(1.0, name=f"{title}.mp4").read_bytes()
            result = client.uploads.single(parent_id=parent, title=title, source=data, filename="c.mp4")
            uploaded[title] = str(result.id)
    return {"ledger": ledger, "keys": keys, "project": project, "folder": folder, "videos": uploaded}


def uploaded_video(emu: Workspace, emu_control: EmulatorControl, clip: Path) -> str:
    """One processed video uploaded directly, titled Talk (a video for an operation to act on)."""
    with VideoClient.from_settings(settings_for(emu)) as client:
        result = client.uploads.single(parent_id=emu.project_id, title="Talk", source=clip.read_bytes())
    wait_done(emu_control, emu)
    return str(result.id)


def upload_requests(emu_control: EmulatorControl, emu: Workspace, since: float) -> list[dict[str, Any]]:
    """The upload host's requests since then (method, path kind, status, dropped), oldest first."""
    log = emu_control.requests(emu.workspace_id, since=since)
    return [
        {
            "method": r["method"],
            "path": "endpoint" if r["path"].startswith("/upload/") else r["path"],
            "status": r["status"],
            "dropped": r["dropped"],
        }
        for r in log
        if r["host"] == "upload"
    ]

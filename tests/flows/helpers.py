"""Helpers for migration tests: inventories of real clips, settings for an emulator workspace."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.options import MigrateOptions

TITLES = ("Plain title {n}", "Лекция №{n}", "第{n}回 東京", "Café {n} 🎬", "Ελληνικά {n}")


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for a webhook receiver or a server a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_for(ws: Workspace, **overrides: Any) -> Settings:
    """Client settings pointing at an emulator workspace."""
    return Settings(api_url=ws.base_url, upload_url=ws.upload_url, token=ws.token, **overrides)


def cli_env(ws: Workspace | None = None, **extra: str) -> dict[str, str]:
    """This process's environment for a videoferry subprocess, pointed at the workspace when given."""
    env = dict(os.environ)
    if ws is not None:
        env.update(
            VIDEOFERRY_API_URL=ws.base_url, VIDEOFERRY_UPLOAD_URL=ws.upload_url, VIDEOFERRY_TOKEN=ws.token
        )
    env.update(extra)
    return env


def cli_argv(*args: str) -> list[str]:
    """The command line of `videoferry ARGS...` run from this checkout's interpreter."""
    return [sys.executable, "-m", "videoferry.flows.cli", *args]


def run_cli(
    args: Sequence[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `videoferry ARGS...` to its end, output captured as text."""
    return subprocess.run(cli_argv(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def migrate_args(
    ws: Workspace, inventory: Path, ledger: Path, *, transfers: int, wait_timeout: int, prefect: bool = False
) -> list[str]:
    """The arguments of `videoferry migrate` (without Prefect unless asked) into the workspace's project."""
    return [
        "migrate",
        str(inventory),
        "--prefect" if prefect else "--no-prefect",
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(ledger),
        "--transfers",
        str(transfers),
        "--chunk-mib",
        "1",
        "--wait-timeout",
        str(wait_timeout),
    ]


def write_inventory(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """A CSV inventory with the union of the rows' columns."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def clip_rows(make: Callable[..., Path], n: int, *, metadata: bool = True) -> list[dict[str, Any]]:
    """n inventory rows of real 1 s clips: unicode titles, and chapters/tags on some."""
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "source": str(make(1.0, name=f"clip-{i}.mp4")),
            "title": TITLES[i % len(TITLES)].format(n=i),
        }
        if metadata and i % 2 == 0:
            row["chapters"] = json.dumps([{"time": 0, "title": "Start"}, {"time": 0.5, "title": "Глава"}])
        if metadata and i % 3 == 0:
            row["tags"] = "a;b"
        rows.append(row)
    return rows


def options(inventory: Path | str, ws: Workspace, tmp: Path, **changes: Any) -> MigrateOptions:
    """Options for a test run: a ledger in tmp, short waits (how often it polls is the workspace's poll rule:
    tests/fixtures/emulator.fast_polls)."""
    base: dict[str, Any] = {
        "inventory": str(inventory),
        "parent_id": ws.project_id,
        "ledger": str(tmp / "ledger.db"),
        "transfers": 3,
        "wait_timeout": 60.0,
    }
    base.update(changes)
    return MigrateOptions(**base)


def creates(control: EmulatorControl, ws: Workspace, since: float | None = None) -> list[dict[str, Any]]:
    """Create calls (init and single-request uploads) in the workspace's request log."""
    return [
        r
        for r in control.requests(ws.workspace_id, since=since)
        if r["method"] == "POST" and r["path"] in ("/v2/init", "/v2/video")
    ]


def api_calls(control: EmulatorControl, ws: Workspace, since: float | None = None) -> list[dict[str, Any]]:
    """Every API call (rate-limited request) in the workspace's request log."""
    return [r for r in control.requests(ws.workspace_id, since=since) if r.get("api")]

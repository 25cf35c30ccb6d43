"""Helpers for migration tests: inventories of real clips, settings for an emulator workspace."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from connectors.config import Settings
from emulator.control import EmulatorControl, Workspace
from flows.migrate import MigrateOptions

TITLES = ("Plain title {n}", "Лекция №{n}", "第{n}回 東京", "Café {n} 🎬", "Ελληνικά {n}")


def settings_for(ws: Workspace, **overrides: Any) -> Settings:
    """Client settings pointing at an emulator workspace."""
    return Settings(api_url=ws.base_url, upload_url=ws.upload_url, token=ws.token, **overrides)


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
    """Options for a fast test run: short polls, a ledger in tmp."""
    base: dict[str, Any] = {
        "inventory": str(inventory),
        "parent_id": ws.project_id,
        "ledger": str(tmp / "ledger.db"),
        "transfers": 3,
        "poll_interval": 0.2,
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

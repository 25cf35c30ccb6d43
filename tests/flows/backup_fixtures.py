"""Helpers of the backup tests: a library migrated into an emulator workspace (titles in several scripts,
descriptions, tags, chapters, privacy), backups of it, its restore into another workspace and the check."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.flows.helpers import options, settings_for, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.backup.options import BackupOptions
from videoferry.flows.backup.runner import run_backup
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import CheckOutcome, run_check
from videoferry.flows.job import CopyOutcome
from videoferry.flows.migrate.runner import run_migration

#: Tests raise the workspace's limits (and the client's) so they run in seconds.
FAST = {"rate_per_second": 200, "rate_per_minute": 12000}
#: Titles in several scripts; descriptions with line breaks, quotes, commas and semicolons.
TITLES = ("Лекция {n}", "第{n}回 東京", "Café {n} 🎬", "Ελληνικά {n}", "محاضرة {n}", 'Plain, "quoted"; {n}')
DESCRIPTIONS = ("", "Zeile eins\nZeile zwei, mit Komma", 'He said "hi"; then left.', "  leading spaces kept")
#: A download of a video's own file (its original's signed link), not of its poster or materials.
_MEDIA = re.compile(r"^/media/([^/]+)/[^/]+/original$")


@dataclass
class Library:
    """A migrated library: its workspace, the source inventory's rows and the migration's ledger."""

    ws: Workspace
    rows: list[dict[str, Any]]
    ledger: Path


def library_rows(make: Any, n: int) -> list[dict[str, Any]]:
    """n rows of real clips, each with its own metadata mix (the issue's: scripts, descriptions, tags,
    chapters; privacy custom with domains on one, nowhere on another)."""
    rows = []
    for i in range(n):
        row: dict[str, Any] = {
            "source": str(make(1.0, name=f"lib-{i}.mp4")),
            "title": TITLES[i % len(TITLES)].format(n=i),
            "description": DESCRIPTIONS[i % len(DESCRIPTIONS)],
            "tags": json.dumps(["backup", f"t{i}", "Ünïcode; tag"] if i % 2 == 0 else [], ensure_ascii=False),
            "chapters": json.dumps(
                [{"time": 0, "title": "Start"}, {"time": 0.5, "title": "Глава, 2"}] if i % 3 != 2 else []
            ),
            "privacy_type": {0: "custom", 1: "nowhere"}.get(i, ""),
            "privacy_domains": json.dumps(["example.com", "*.example.org"]) if i == 0 else "",
        }
        rows.append(row)
    return rows


def make_library(tmp: Path, control: EmulatorControl, ws: Workspace, make: Any, n: int = 6) -> Library:
    """Migrate n clips into the workspace's project (the library a backup is taken of)."""
    control.set_limits(ws, **FAST)
    rows = library_rows(make, n)
    inventory = write_inventory(tmp / "source.csv", rows)
    ledger = tmp / "migrate.db"
    outcome = run_migration(options(inventory, ws, tmp, ledger=str(ledger)), settings_for(ws, **FAST))
    assert outcome.exit_code == 0, outcome.reasons
    return Library(ws, rows, ledger)


def backup(ws: Workspace, to: str, ledger: Path, **changes: Any) -> CopyOutcome:
    """One run_backup of the workspace's project (fast retries)."""
    values: dict[str, Any] = {
        "project": ws.project_id,
        "to": to,
        "ledger": str(ledger),
        "retry_backoff": 0.1,
        **changes,
    }
    return run_backup(BackupOptions(**values), settings_for(ws, **FAST))


def media_gets(control: EmulatorControl, ws: Workspace, since: float | None = None) -> Counter[str]:
    """Downloads of each video's file (its signed link) in the workspace's request log."""
    found: Counter[str] = Counter()
    for request in control.requests(ws.workspace_id, since=since):
        match = _MEDIA.match(request["path"])
        if match and request["method"] == "GET":
            found[match.group(1)] += 1
    return found


def video_reads(control: EmulatorControl, ws: Workspace, since: float | None = None) -> int:
    """GETs of one video (not lists) in the workspace's request log."""
    return sum(
        1
        for r in control.requests(ws.workspace_id, since=since)
        if r["method"] == "GET" and re.fullmatch(r"/v1/videos/[^/]+", r["path"])
    )


def restore_and_check(tmp: Path, control: EmulatorControl, inventory: str, **migrate: Any) -> CheckOutcome:
    """`migrate INVENTORY --parent-id OTHER` into a second workspace (another token), then `check` it
    against the same inventory with the restore's ledger."""
    other = control.create_workspace()
    control.set_limits(other, **FAST)
    ledger = tmp / f"restore-{other.workspace_id[:8]}.db"
    opts = options(inventory, other, tmp, ledger=str(ledger), **migrate)
    restored = run_migration(opts, settings_for(other, **FAST))
    assert restored.exit_code == 0, restored.reasons
    check = CheckOptions(inventory=inventory, ledger=str(ledger), parent_id=other.project_id)
    return run_check(check, settings_for(other, **FAST))


def md5_of(path: Path) -> str:
    """md5 of a file."""
    return hashlib.md5(path.read_bytes()).hexdigest()

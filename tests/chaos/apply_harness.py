"""Chaos for `videoferry apply`: a migrated library, a seeded operations file of every kind, the checks."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import options, settings_for, write_inventory
from videoferry.core.tidy import same_title
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger

#: Clip length of the library, and what a cut keeps of it: a second trim of the result would keep less.
CLIP_SECONDS = 2.0
TRIM = [{"start": 0.5, "length": 1.0}]
KEPT_SECONDS = 1.0
TOLERANCE = 0.2
#: Items migrated for each seed (enough for every kind with references between them).
LIBRARY_ITEMS = 10

#: Extra faults of the operations a migration never makes: committed, then the answer lost.
ACTION_PATHS = "^/v1/videos/[^/]+/(copy|cut|concat|move)$"


@dataclass
class ApplyLibrary:
    """A clean migration to act on: its ledger, the items' videos by key, a second project and folder."""

    ledger: Path
    videos: dict[str, str]  # inventory key -> video id
    project: str
    folder: str
    replacement: Path  # a replace row's new bytes (several tus chunks of CHUNK)
    materials: list[Path]  # an attach row's files


#: The tus chunk of the faulted runs: a replace's clip and each material take several chunks.
CHUNK = 8 * 1024


def make_library(
    tmp_path: Path, control: EmulatorControl, ws: Workspace, make: Callable[..., Path]
) -> ApplyLibrary:
    """Migrate LIBRARY_ITEMS clips cleanly (no faults) and wait until every video is done."""
    rows = [
        {"source": str(make(CLIP_SECONDS, name=f"lib-{i}.mp4")), "title": f"Lecture {i}"}
        for i in range(LIBRARY_ITEMS)
    ]
    inventory = write_inventory(tmp_path / "library.csv", rows)
    outcome = run_migration(options(inventory, ws, tmp_path), settings_for(ws))
    assert outcome.exit_code == 0, outcome.reasons
    ledger = tmp_path / "ledger.db"
    with Ledger.open(ledger, create=False) as book:
        videos = {i.spec.key: i.video_id or "" for i in sorted(book.items(), key=lambda i: i.spec.row or 0)}
    project, folder = control.create_project(ws)
    materials = [tmp_path / "materials" / "slides.pdf", tmp_path / "materials" / "notes.txt"]
    materials[0].parent.mkdir(exist_ok=True)
    for n, material in enumerate(materials):
        material.write_bytes(random.Random(n).randbytes(3 * CHUNK + 100 * n))
    replacement = make(CLIP_SECONDS, name="replacement.mp4")
    return ApplyLibrary(ledger, videos, project, folder, replacement, materials)


def chaos_operations(path: Path, lib: ApplyLibrary, seed: int) -> Path:
    """Every kind, with op: references between rows (chains of cut -> concat and copy -> move -> delete)."""
    rng = random.Random(seed * 977 + 3)
    keys = list(lib.videos)
    rng.shuffle(keys)
    rows: list[dict[str, Any]] = []
    chapters = json.dumps([{"time": 0, "title": "Start"}, {"time": "0:01", "title": "End"}])
    for k in keys:
        rows.append({"op": "chapters", "target": f"key:{k}", "chapters": chapters})
    for k in keys[:4]:
        rows.append(
            {"op": "update", "target": f"key:{k}", "tags": f"seed{seed};chaos", "description": "Ünïcode — ok"}
        )
    for n, k in enumerate(keys[:3]):
        rows.append({"op": "cut", "id": f"cut{n}", "target": f"key:{k}", "trim": json.dumps(TRIM)})
    for n in range(2):
        rows.append({"op": "concat", "id": f"cc{n}", "target": f"op:cut{n}", "prepend": f"key:{keys[4 + n]}"})
    for n, k in enumerate(keys[6:9]):
        rows.append({"op": "copy", "id": f"cp{n}", "target": f"key:{k}", "parent_id": lib.project})
        rows.append(
            {
                "op": "move",
                "id": f"mv{n}",
                "target": f"op:cp{n}",
                "project_id": lib.project,
                "folder_id": lib.folder,
            }
        )
    rows.append({"op": "delete", "id": "del", "target": "op:mv2"})
    rows.append({"op": "replace", "id": "rep", "target": f"key:{keys[9]}", "source": str(lib.replacement)})
    attachments = json.dumps([str(m) for m in lib.materials])
    rows.append({"op": "attach", "id": "att", "target": f"key:{keys[3]}", "attachments": attachments})
    rows.append(
        {
            "op": "attach",
            "id": "att1",
            "target": f"key:{keys[9]}",
            "attachments": str(lib.materials[1]),
            "additional_materials_enabled": "true",
        }
    )
    rng.shuffle(rows)  # the file's order is not the run order: references decide
    return write_ops(path, rows)  # fmt: skip


def made_by_ledger(ledger: Path) -> tuple[set[str], dict[str, list[str]], list[str]]:
    """The items' videos; per unit the videos its calls created (two would be a duplicate); and the titles
    of the videos calls with an unknown outcome may have made (a killed run's intent, not yet reconciled)."""
    with Ledger.open(ledger, create=False) as book:
        items = {i.video_id for i in book.items() if i.video_id}
        created: dict[str, list[str]] = {}
        pending: list[str] = []
        for op in book.ops():
            if op.op_key and op.created_id:
                created.setdefault(op.op_key, []).append(op.created_id)
            if op.op_key and op.status == "intent" and op.kind in ("copy", "concat", "cut"):
                pending.append(str((op.before or {}).get("title")))
    return items, created, pending


def assert_no_strays(control: EmulatorControl, ws: Workspace, ledger: Path) -> None:
    """Every video in the service is an item's or one a unit created, and no unit created two. Between
    killed runs, a call whose outcome is still unknown may account for one video with its source's title."""
    items, created, pending = made_by_ledger(ledger)
    doubled = {k: v for k, v in created.items() if len(v) > 1}
    assert not doubled, f"units that created more than one video: {doubled}"
    known = items | {v for vs in created.values() for v in vs}
    stray = [(v["id"], v["title"], v["created_at"]) for v in control.videos(ws) if v["id"] not in known]
    for found in list(stray):  # the source's title as the service may keep it (core.tidy.same_title)
        title = next((t for t in pending if same_title(t, found[1] or "")), None)
        if title is not None:
            pending.remove(title)
            stray.remove(found)
    assert not stray, f"{len(stray)} videos no item or operation accounts for: {stray[:5]}"


def wait_processed(
    control: EmulatorControl, ws: Workspace, bound: float = 120.0
) -> dict[str, dict[str, Any]]:
    """The workspace's videos by id once none is processing (bounded)."""
    return {v["id"]: v for v in wait_done(control, ws, bound)}


def assert_applied_once(control: EmulatorControl, ws: Workspace, lib: ApplyLibrary) -> None:
    """After the clean rerun: every unit done, and each edit's effect is there exactly once."""
    with Ledger.open(lib.ledger, create=False) as book:
        units = {u.op_id: u for u in book.units()}
    undone = [(u.unit_key, u.state, u.error_code, u.error_message) for u in units.values()]
    undone = [u for u in undone if u[1] != "done"]
    assert not undone, undone
    assert_no_strays(control, ws, lib.ledger)
    videos = wait_processed(control, ws)
    for n in range(3):
        cut = units[f"cut{n}"]
        result = videos[cut.result_id or ""]
        assert abs(result["duration"] - KEPT_SECONDS) < TOLERANCE, (cut.unit_key, result["duration"])
        if cut.result_id != cut.video_id:  # the service made a new video: the source is untouched
            assert abs(videos[cut.video_id or ""]["duration"] - CLIP_SECONDS) < TOLERANCE
    for n in range(2):
        joined = videos[units[f"cc{n}"].result_id or ""]
        assert abs(joined["duration"] - (CLIP_SECONDS + KEPT_SECONDS)) < TOLERANCE, joined["duration"]
    for n in range(2):
        moved = videos[units[f"mv{n}"].result_id or ""]
        assert (moved["project_id"], moved["folder_id"]) == (lib.project, lib.folder)
    assert units["del"].video_id not in videos and units["mv2"].result_id not in videos
    replaced = videos[units["rep"].video_id or ""]
    assert replaced["version"] == 2, replaced["version"]  # replaced once (a migrated video starts at 1)
    assert replaced["md5"] == hashlib.md5(lib.replacement.read_bytes()).hexdigest()
    for key, files in (("att", lib.materials), ("att1", lib.materials[1:])):
        held = videos[units[key].video_id or ""].get("additional_materials") or []
        assert sorted((m["original_name"], m["file_size"]) for m in held) == sorted(
            (f.name, f.stat().st_size) for f in files
        ), key  # each material once
    assert videos[units["att1"].video_id or ""]["additional_materials_enabled"] is True
    for video_id in lib.videos.values():
        titles = [c["title"] for c in (videos[video_id].get("chapters") or {}).get("items", [])]
        assert titles == ["Start", "End"], (video_id, titles)

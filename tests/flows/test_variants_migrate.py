"""Migrations against services that choose otherwise where the spec is silent: every variant, lost answers."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import REFUSALS, SETUP_ONLY
from tests.flows.bounds import RUN_BOUND_SECONDS, within
from tests.flows.helpers import free_port, options, settings_for, write_inventory
from videoferry.connectors.ids import try_normal_id
from videoferry.core.tidy import same_chapters, same_tags, same_title
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.variants import EXCLUSIVE
from videoferry.flows.migrate.runner import run_migration
from videoferry.state.ledger import Ledger

#: Bundles of compatible variants; together they cover every variant the emulator has. Variants of operations
#: a migration never makes (copy, move, cut, concat and their bodies) ride along to show a migration does
#: not care; the client's own tests exercise them (tests/connectors/test_client_variants.py).
BUNDLES: dict[str, dict[str, Any]] = {
    "filters-pages-clock-ids-session": {
        "variants": [
            "ignore-title-filter",
            "ignore-parent-filter",
            "page-cap-10",
            "no-total",
            "clock-behind",
            "whole-seconds",
            "ids-base58",
            "init-session-id",
            "replace-needs-bytes",  # a lost init answer's video deleted and created again
            "tus-rate-limited",
            "move-put",
            "copy-put",
            "empty-bodies",
        ],
        "via": "tus",
    },
    "lag-headers-methods": {
        "variants": [
            "list-lag",
            "clock-ahead",
            "ids-undashed",
            "no-original",
            "headers-utf8",
            "update-put",
            "chapters-post",
            "video-put",
            "cut-put",
            "concat-put",
            "cut-new-video",
            "init-replace-field",  # apply's replace sessions (tests/flows/test_apply_resumable.py)
            "materials-downloadable",  # rides along (tests/flows/test_backup_materials.py)
        ],
        "via": "single",
    },
    "tidy-poll-rule": {
        "variants": [
            "tidy-text",
            "title-cap",
            "tags-tidy",
            "chapter-titles-trimmed",
            "poll-rule-429",
            "ignore-title-filter",
            # with tus, a lost init answer leaves a video without its address; this service refuses a replace
            # session for it (a video still waiting for its bytes), so the video is deleted, through POST
            "replace-needs-bytes",
            "delete-post",
            "patch-body-cap",  # chunks from 4 KiB: a clip's second PATCH (8 KiB) is refused
        ],
        "params": {"patch_body_cap": 6 * 1024},
        "chunk_size": 4 * 1024,
        "via": "tus",
    },
    "expiry-webhooks": {
        "variants": [
            "page-cap-25",
            "ids-upper",
            "endpoint-expiry",
            "webhook-alt-shape",
            "id-only-bodies",
            "processing-queue",  # a backlog: the videos wait their turn behind each other
        ],
        "params": {"endpoint_ttl_seconds": 0.5},
        "via": "tus",
        "webhooks": True,
    },
}
#: Create answers lost after the service committed the create (init or single upload, either method).
LOST_CREATES = "^/v2/(init|video)$"


def test_the_bundles_cover_every_variant(emu_control: EmulatorControl) -> None:
    covered = {name for bundle in BUNDLES.values() for name in bundle["variants"]}
    # The refusals stop every migration by design: test_workspace_refusal.py runs each job under them.
    missing = sorted(set(emu_control.variants()) - covered - SETUP_ONLY - REFUSALS)
    assert not missing, f"variants no bundle runs a migration under: {missing}"
    assert covered <= set(emu_control.variants()) - SETUP_ONLY, sorted(covered & SETUP_ONLY)
    for name, bundle in BUNDLES.items():
        for group in EXCLUSIVE:
            assert len(set(bundle["variants"]) & set(group)) <= 1, (name, group)


def md5_of(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _rows(make: Any, tmp_path: Path, n: int) -> list[dict[str, Any]]:
    """n clips of n different sizes; some share a title (explicit or derived from the file name)."""
    rows: list[dict[str, Any]] = []
    for i in range(n):
        clip = make(0.5 + 0.1 * (i % 5), width=160 + 16 * (i % 4), name=f"c{i}.mp4")
        if i < 2:  # two cameras' first file: the same derived title
            card = tmp_path / f"card{i}"
            card.mkdir()
            clip = clip.rename(card / "GOPR0001.MP4")
            rows.append({"source": str(clip), "title": ""})
            continue
        title = "Introduction" if i % 3 == 0 else f"Talk {i} — Café ☕"
        row: dict[str, Any] = {"source": str(clip), "title": title}
        if i % 4 == 1:
            row["tags"] = "variant;test"
            row["chapters"] = '[{"time": 0, "title": "Start"}, {"time": 0.25, "title": "Next"}]'
        rows.append(row)
    sizes = [Path(r["source"]).stat().st_size for r in rows]
    assert len(set(sizes)) == len(sizes), "every test file needs a unique size"
    return rows


def assert_one_video_per_item(
    control: EmulatorControl, ws: Workspace, ledger_path: Path, rows: list[dict[str, Any]]
) -> None:
    """Exactly one done video per row, holding that row's bytes and title, and nothing else."""
    videos = control.videos(ws)
    by_md5: dict[str, list[dict[str, Any]]] = {}
    for video in videos:
        by_md5.setdefault(video["md5"], []).append(video)
    assert len(videos) == len(rows), [(v["title"], v["status"]) for v in videos]
    ledger = Ledger.open(ledger_path, create=False)
    try:
        items = {item.spec.source: item for item in ledger.items()}
    finally:
        ledger.close()
    for row in rows:
        source = Path(row["source"])
        holding = by_md5.get(md5_of(source), [])
        assert len(holding) == 1, f"{len(holding)} videos hold the bytes of {source.name} ({row['title']!r})"
        (video,) = holding
        assert video["status"] == "done"
        assert same_title(row["title"] or source.stem, video["title"]), (row["title"], video["title"])
        item = items[row["source"]]
        assert item.state == "finished", (item.state, item.error_code, item.error_message)
        assert try_normal_id(item.video_id) == try_normal_id(video["id"])
        if row.get("tags"):
            assert same_tags(["variant", "test"], video["tags"]), video["tags"]
            stored = [(c["time"], c["title"]) for c in video["chapters"]["items"]]
            assert same_chapters([(0, "Start"), (250, "Next")], stored), stored


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
def test_migrate_holds_its_guarantees_under_each_bundle(
    bundle: str, tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    spec = BUNDLES[bundle]
    rows = _rows(clip_factory, tmp_path, 10)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    emu_control.set_variants(emu, spec["variants"], **spec.get("params", {}))
    faults: list[dict[str, Any]] = [
        # create answers lost after the service committed them
        {"kind": "drop_after_commit", "method": "POST", "path": LOST_CREATES, "rate": 0.4},
        {"kind": "drop_after_commit", "method": "PUT", "path": LOST_CREATES, "rate": 0.4},
    ]
    if "endpoint-expiry" in spec["variants"]:  # the first uploads outlive their address
        faults.append({"kind": "latency", "ms": 700, "method": "PATCH", "path": "^/upload/", "times": 8})
    emu_control.set_faults(emu, faults, seed=11)
    changes: dict[str, Any] = {
        "via": spec["via"],
        "transfers": 4,
        "chunk_size": spec.get("chunk_size", 16 * 1024),
    }
    emu_control.set_poll_rule(emu, 0.5)  # listings 0.5 s apart: the lagging list variants show up
    if spec.get("webhooks"):
        port = free_port()
        emu_control.set_webhook(emu, f"http://127.0.0.1:{port}/hook")
        changes["webhook_listen"] = f"127.0.0.1:{port}"
    opts = options(inventory, emu, tmp_path, **changes)
    # Every run ends within RUN_BOUND_SECONDS (tests/flows/bounds.py), whatever the bundle: no endless wait.
    outcome = within(
        lambda: run_migration(opts, settings_for(emu)), RUN_BOUND_SECONDS, f"the run under {bundle}"
    )
    emu_control.clear_faults(emu)
    if outcome.exit_code != 0:  # an item out of create attempts under the faults: the rerun finishes it
        outcome = within(
            lambda: run_migration(opts, settings_for(emu)), RUN_BOUND_SECONDS, f"the rerun under {bundle}"
        )
    assert outcome.exit_code == 0, outcome.reasons
    assert_one_video_per_item(emu_control, emu, tmp_path / "ledger.db", rows)
    journal = _journal(tmp_path / "ledger.db")
    assert "reconcile: adopted existing video" in journal  # lost answers were really looked up
    if "endpoint-expiry" in spec["variants"]:
        assert "upload address gone" in journal
    if "delete-post" in spec["variants"]:  # the no-duplicate recovery's deletes went through (POST)
        log = emu_control.requests(emu.workspace_id)
        deletes = [
            r
            for r in log
            if r["method"] in ("DELETE", "POST") and re.fullmatch("/v1/videos/[^/]+", r["path"])
        ]
        assert [r for r in deletes if r["method"] == "POST" and r["status"] == 200], deletes
    if "patch-body-cap" in spec["variants"]:  # the cap was met and learned once for the run's uploads
        log = emu_control.requests(emu.workspace_id)
        refused = [r for r in log if r["method"] == "PATCH" and r["status"] == 413]
        assert 1 <= len(refused) <= changes["transfers"], refused


def _journal(path: Path) -> str:
    ledger = Ledger.open(path, create=False)
    try:
        return "\n".join(e.message or "" for item in ledger.items() for e in ledger.events(item.key))
    finally:
        ledger.close()


@pytest.mark.parametrize("via", [pytest.param("single", marks=pytest.mark.long), "tus"])  # single: make chaos
def test_lost_answers_with_the_title_filter_ignored_and_shared_titles(
    via: str, tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """The issue's case: two dozen items, same parent, created at once, some with identical titles, create
    answers lost while the service ignores the title filter of the lookup."""
    rows = _rows(clip_factory, tmp_path, 24)
    assert len({r["title"] for r in rows}) < len(rows)  # identical titles among them
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    emu_control.set_variants(emu, ["ignore-title-filter"])
    emu_control.set_faults(
        emu,
        [
            {"kind": "error", "status": 503, "method": "POST", "path": LOST_CREATES, "rate": 0.2},
            {"kind": "drop_after_commit", "method": "POST", "path": LOST_CREATES, "rate": 0.5},
        ],
        seed=5,
    )
    opts = options(inventory, emu, tmp_path, via=via, transfers=len(rows))
    outcome = run_migration(opts, settings_for(emu))
    emu_control.clear_faults(emu)
    if outcome.exit_code != 0:
        outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    assert_one_video_per_item(emu_control, emu, tmp_path / "ledger.db", rows)
    assert "reconcile: adopted existing video" in _journal(tmp_path / "ledger.db")

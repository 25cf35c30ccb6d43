"""API calls per video to reach done: tus and URL import polling, tus with webhooks, and with metadata."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.figures import Figure
from bench.ratelog import api_calls, breakdown, refused
from bench.services import EmulatorProcess, FileServer
from bench.workload import (
    BenchConfig,
    clip_bytes,
    free_port,
    settings_for,
    write_clips,
    write_inventory,
    write_rows,
)
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import run_migration

#: Videos per mode; processing time per video and the service's poll rule (the spec's 5 s; lowered for the
#: quick run through the emulator's control API, the only way below 5 s).
FULL = {"videos": 100, "processing": 2.0, "poll": 5.0}
QUICK = {"videos": 5, "processing": 0.5, "poll": 1.0}
TRANSFERS = 4
#: Modes: (figure suffix, how the bytes go, statuses by webhook, inventory with metadata, service variants,
#: share of create answers lost after the service committed the create).
MODES: tuple[tuple[str, str, bool, bool, tuple[str, ...], float], ...] = (
    ("tus", "tus", False, False, (), 0.0),
    ("url", "url", False, False, (), 0.0),
    ("webhook", "tus", True, False, (), 0.0),
    ("metadata", "tus", True, True, (), 0.0),
    ("lost", "tus", False, False, (), LOST_SHARE := 0.2),
    ("tidy_lost", "tus", False, False, ("tidy-text", "title-cap", "ignore-title-filter"), LOST_SHARE),
    # Upload requests counted by the rate limit (a variant the client copes with): the price of a small clip
    # is its init and its PATCH (and what a 429 from the upload address costs), not one call.
    ("tus_rate_limited", "tus", False, False, ("tus-rate-limited",), 0.0),
)
#: Create answers lost: init and single uploads, either method.
LOST_CREATES = "^/v2/(init|video)$"


@dataclass(frozen=True)
class Inventory:
    """An inventory file and the least API calls any client needs for it (creates and finish writes)."""

    path: Path
    least: int
    owed: str


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate N real clips per mode into fresh workspaces at the real limits (10/s and 300/min): by tus and
    by URL import with status polls, by tus with webhooks, and by tus with webhooks from an inventory with
    metadata; count the API calls each workspace received (preflight, creates, lists, GETs, finish writes).
    """
    size = QUICK if cfg.quick else FULL
    videos = int(size["videos"])
    root = cfg.subdir("api-calls")
    files = root / "files"
    files.mkdir()
    data = clip_bytes()
    with EmulatorProcess(root) as emu, FileServer(files) as server:
        ctl = emu.ctl()
        for name, via, webhook, metadata, variants, lost in MODES:
            ws = ctl.create_workspace(
                processing="timed", processing_seconds=size["processing"], poll_rule_seconds=size["poll"]
            )
            clips = write_clips(files / name, videos, data)
            if via == "tus":
                sources = [str(p) for p in clips]
            else:
                sources = [f"{server.url}/{name}/{p.name}" for p in clips]
            if metadata:
                inventory = metadata_inventory(root / f"{name}.csv", sources)
            elif "tidy-text" in variants:
                inventory = pasted_inventory(root / f"{name}.csv", sources)
            else:
                inventory = Inventory(
                    write_inventory(root / f"{name}.csv", sources), videos, f"{videos} creates"
                )
            if variants:
                ctl.set_variants(ws, list(variants))
            if lost:
                rules = [
                    {"kind": "drop_after_commit", "method": m, "path": LOST_CREATES, "rate": lost}
                    for m in ("POST", "PUT")
                ]
                ctl.set_faults(ws, rules, seed=26)
            listen = webhook_target(ctl, ws) if webhook else None
            opts = MigrateOptions(
                inventory=str(inventory.path),
                parent_id=ws.project_id,
                ledger=str(root / f"{name}.db"),
                transfers=TRANSFERS,
                wait_timeout=300.0,
                webhook_listen=listen,
            )
            outcome = run_migration(opts, settings_for(ws))
            entries = ctl.requests(ws.workspace_id)
            calls = api_calls(entries)
            complete = int(outcome.summary.get("complete", 0))
            finished = int(outcome.summary.get("counts", {}).get("finished", 0))
            readiness = "statuses by webhook" if webhook else "statuses by polling"
            if lost:
                readiness += (
                    f"; {lost:.0%} of create answers lost, {len(ctl.videos(ws))} videos in the service"
                )
            if variants:
                readiness += f"; variants {', '.join(variants)}"
            yield Figure(
                f"api_calls_per_video_{name}",
                len(calls) / videos,
                note=(
                    f"least {inventory.least / videos:.2f} ({inventory.owed}); {videos} videos, {complete} "
                    f"done ({finished} finished); {breakdown(calls)}; {refused(entries)} 429s; {via}, "
                    f"{readiness}; poll {size['poll']:g} s, processing {size['processing']:g} s"
                ),
            )


def webhook_target(ctl: EmulatorControl, ws: Workspace) -> str:
    """A free loopback port, registered as the workspace's webhook URL; the HOST:PORT the run listens on.

    The service sends media.update.status to the URL configured for the workspace (its dashboard; the
    emulator's control call here): the run only listens there.
    """
    port = free_port()
    ctl.set_webhook(ws, f"http://127.0.0.1:{port}/")
    return f"127.0.0.1:{port}"


def pasted_inventory(path: Path, sources: list[str]) -> Inventory:
    """Titles as people paste them: spaces around and doubled, a tab, decomposed accents, and every tenth
    title one of a series alike in its first 140 characters (a cap makes them one title)."""
    head = (
        "Lecture series on the history of video compression, recorded in the main hall of the institute " * 2
    )
    rows = []
    for i, source in enumerate(sources):
        if i % 10 == 0:
            title = f"{head[:140]} part {i // 10}"
        else:
            title = f"  Cafe\u0301  talk\t{i:05d} "
        rows.append({"source": source, "title": title})
    n = len(rows)
    return Inventory(
        write_rows(path, rows), n, f"{n} creates; renames of the titles a cap makes alike: see calls"
    )


def metadata_inventory(path: Path, sources: list[str]) -> Inventory:
    """An inventory as a library export carries it: tags on half the rows, privacy on a quarter, chapters on a
    third, and the first tenth in pairs that share a title (the create sends a unique placeholder, the finish
    update sets the real title).

    The least calls: one create per video, one update per video that owes tags, privacy or its real title
    (none of them can travel with the create), one chapters call per video with chapters.
    """
    shared = max(2, len(sources) // 10) // 2 * 2
    rows: list[dict[str, str]] = []
    updates = chapters = 0
    for i, source in enumerate(sources):
        row = {
            "source": source,
            "title": f"Shared title {i // 2}" if i < shared else f"Clip {i:05d}",
            "tags": "bench; metadata" if i % 2 == 0 else "",
            "privacy_type": "nowhere" if i % 4 == 1 else "",
            "chapters": json.dumps([{"time": 0, "title": "Start"}, {"time": 0.2, "title": "Middle"}])
            if i % 3 == 0
            else "",
        }
        updates += bool(row["tags"] or row["privacy_type"] or i < shared)
        chapters += bool(row["chapters"])
        rows.append(row)
    owed = f"{len(rows)} creates, {updates} updates, {chapters} chapters"
    return Inventory(write_rows(path, rows), len(rows) + updates + chapters, owed)

"""Planning a 100k-row inventory (time, peak RSS) and rerunning a ledger whose 100k items are all finished."""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from bench.child import measure
from bench.figures import Figure
from bench.ratelog import api_calls, breakdown
from bench.services import EmulatorProcess
from bench.workload import MIB, BenchConfig

FULL_ROWS = 100_000
QUICK_ROWS = 1_000
#: Every item of the fabricated finished ledger walked this path (one journal row per step).
PATH = ("planned", "creating", "uploading", "uploaded", "processing", "done", "finished")


def write_library_inventory(path: Path, rows: int, parent_id: str) -> Path:
    """A CSV inventory as a library export would be: S3 sources, titles, descriptions, tags, some chapters."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["source", "title", "description", "parent_id", "tags", "chapters"])
        for i in range(1, rows + 1):
            chapters = (
                json.dumps([{"time": 0, "title": "Intro"}, {"time": "1:30", "title": "Main"}])
                if i % 10 == 0
                else ""
            )
            writer.writerow(
                [
                    f"s3://bench-library/videos/{i // 1000:03d}/clip-{i:06d}.mp4",
                    f"Clip {i:06d}",
                    f"Library item {i}, migrated by the benchmark",
                    parent_id,
                    "archive;2026" if i % 3 == 0 else "",
                    chapters,
                ]
            )
    return path


def mark_all_finished(ledger: Path) -> int:
    """Fabricate the end state of a finished migration: every item finished with a video id, and the journal
    rows a real run would have written. Driving 100k items through the service would take over five hours at
    300 calls/min, so this benchmark fixture writes the end state directly with SQL (the product never does).
    """
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    run_id = "bench-fabricated-run"
    conn = sqlite3.connect(ledger)
    try:
        with conn:
            keys = [r[0] for r in conn.execute("SELECT key FROM items")]
            conn.execute(
                "INSERT INTO runs (run_id, command, params, status, started_at, finished_at, summary)"
                " VALUES (?, 'migrate', '{}', 'succeeded', ?, ?, '{}')",
                (run_id, stamp, stamp),
            )
            conn.execute(
                "UPDATE items SET state = 'finished', status = 'done', create_title = title,"
                " create_description = description, attempts = 1, created_intent_at = ?, done_at = ?,"
                " finished_at = ?, updated_at = ?, last_run = ?, meta_pending = 0,"
                " bytes_total = ?, upload_offset = ?,"
                " video_id = substr(key, 1, 8) || '-' || substr(key, 9, 4) || '-' || substr(key, 13, 4)"
                " || '-' || substr(key, 17, 4) || '-' || substr(key, 21, 12)",
                (stamp, stamp, stamp, stamp, run_id, 50 * MIB, 50 * MIB),
            )
            conn.executemany(
                "INSERT INTO events (time, run_id, kind, key, from_state, to_state, message)"
                " VALUES (?, ?, 'transition', ?, ?, ?, 'fabricated by bench')",
                (
                    (stamp, run_id, key, a, b)
                    for key in keys
                    for a, b in zip(PATH[:-1], PATH[1:], strict=True)
                ),
            )
        return len(keys)
    finally:
        conn.close()


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Plan the inventory into a fresh ledger in a child process; mark everything finished; rerun it."""
    rows = QUICK_ROWS if cfg.quick else FULL_ROWS
    root = cfg.subdir("plan")
    label = f"{rows // 1000}k"
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        ws = ctl.create_workspace()
        inventory = write_library_inventory(root / "library.csv", rows, ws.project_id)
        ledger = root / "ledger.db"
        planned = measure({"job": "plan", "inventory": str(inventory), "ledger": str(ledger)})
        if planned["added"] != rows:
            raise RuntimeError(f"planned {planned['added']} of {rows} rows ({planned['rejected']} rejected)")
        yield Figure(
            f"plan_{label}_rows_seconds",
            planned["seconds"],
            "s",
            f"read the CSV ({inventory.stat().st_size / MIB:.0f} MiB), plan {rows} rows into a new ledger: "
            f"{rows / planned['seconds']:.0f} rows/s",
        )
        yield Figure(
            f"peak_rss_plan_{label}_rows",
            planned["peak_rss"] / MIB,
            "MiB",
            f"after imports {planned['baseline_rss'] / MIB:.0f} MiB",
        )
        mark_all_finished(ledger)
        env = {
            "VIDEOFERRY_API_URL": ws.base_url,
            "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
            "VIDEOFERRY_TOKEN": ws.token,
        }
        options = {"inventory": str(inventory), "parent_id": ws.project_id, "ledger": str(ledger)}
        rerun = measure({"job": "migrate", "options": options}, env)
        calls = api_calls(ctl.requests(ws.workspace_id))
    finished = int(rerun["counts"].get("finished", 0))
    if finished != rows:
        raise RuntimeError(f"rerun left {finished} of {rows} items finished: {rerun['reasons']}")
    yield Figure(
        f"rerun_finished_{label}_seconds",
        rerun["seconds"],
        "s",
        f"run_migration over a ledger whose {rows} items are all finished (fabricated, see README): "
        f"{len(calls)} API calls ({breakdown(calls)}); peak RSS {rerun['peak_rss'] / MIB:.0f} MiB",
    )

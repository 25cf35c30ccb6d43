"""Planning a 100k-row inventory (time, peak RSS) and rerunning a ledger whose 100k items are all finished."""

from __future__ import annotations

import csv
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from bench.child import measure
from bench.figures import Figure, with_rounds
from bench.ratelog import api_calls, breakdown
from bench.services import EmulatorProcess
from bench.workload import MIB, BenchConfig
from state.batch import CreateIntent, UploadSession
from state.ledger import Ledger
from state.machine import PLANNED

FULL_ROWS = 100_000
QUICK_ROWS = 1_000
#: Plans (each into a new ledger) and reruns over the finished ledger: the figures' spread.
ROUNDS = 3
#: Items moved per transaction while the finished ledger is built (one batch step each).
BATCH = 10_000
#: The size every benchmark item's upload reports.
SIZE = 50 * MIB


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


def _video_id(key: str) -> str:
    """A video id in the service's UUID form, one per item."""
    return f"{key[:8]}-{key[8:12]}-{key[12:16]}-{key[16:20]}-{key[20:32]}"


def finish_through_ledger(ledger_path: Path, upload_url: str) -> int:
    """Bring every planned item of the ledger to finished as a run records it, without the service: the
    ledger's own batch steps, BATCH items per transaction, each item checked against the state machine and
    journalled (create intent with the title and description sent; upload session with its video id,
    endpoint and size; upload complete; the status done as the watcher's listing reports it; finished).
    Driving 100k items through the service would take over five hours at 300 calls/min. Not written: the
    finish step's op rows (update / chapters calls) and tus offsets (no event). Returns how many finished.
    """
    ledger = Ledger.open(ledger_path)
    try:
        run_id = ledger.start_run("migrate", {"built_by": "bench.plan.finish_through_ledger"})
        # (key, title, description) of every planned item in the ledger's own order (as a run takes them):
        # a batch's rows then share table pages, and each commit rewrites only its own part of the table.
        planned = [(i.key, i.spec.title, i.spec.description) for i in ledger.items([PLANNED])]
        for start in range(0, len(planned), BATCH):
            chunk = planned[start : start + BATCH]
            keys = [key for key, _, _ in chunk]
            intents = (CreateIntent(k, title, text, f"{SIZE}:etag-{k[:16]}") for k, title, text in chunk)
            ledger.begin_creates(run_id, intents)
            sessions = (
                UploadSession(k, _video_id(k), f"{upload_url.rstrip('/')}/files/{_video_id(k)}", SIZE)
                for k in keys
            )
            ledger.create_started_uploads(run_id, sessions)
            ledger.uploads_complete(run_id, keys)
            ledger.apply_statuses(run_id, {_video_id(k): "done" for k in keys})  # the watcher's listing page
            ledger.finish_all(run_id, keys)
        ledger.finish_run(run_id, "succeeded", ledger.summary(run_id))
        return len(planned)
    finally:
        ledger.close()


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Plan the inventory into a new ledger in a child process; finish every item by the ledger; rerun."""
    rows = QUICK_ROWS if cfg.quick else FULL_ROWS
    root = cfg.subdir("plan")
    label = f"{rows // 1000}k"
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        ws = ctl.create_workspace()
        inventory = write_library_inventory(root / "library.csv", rows, ws.project_id)
        # ROUNDS plans, each into a new ledger; the first ledger is then finished and rerun ROUNDS times.
        ledger = root / "ledger.db"
        plans = []
        for n in range(ROUNDS):
            into = ledger if n == 0 else root / f"ledger-{n}.db"
            plans.append(measure({"job": "plan", "inventory": str(inventory), "ledger": str(into)}))
        planned = plans[0]
        if any(p["added"] != rows for p in plans):
            raise RuntimeError(f"planned {planned['added']} of {rows} rows ({planned['rejected']} rejected)")
        times = [float(p["seconds"]) for p in plans]
        yield with_rounds(
            f"plan_{label}_rows_seconds",
            times,
            "s",
            f"read the CSV ({inventory.stat().st_size / MIB:.0f} MiB), plan {rows} rows into a new ledger, "
            f"{ROUNDS} times: {', '.join(f'{t:.3f}' for t in times)} s; "
            f"{rows / statistics.median(times):.0f} rows/s",
        )
        peaks = [p["peak_rss"] / MIB for p in plans]
        yield with_rounds(
            f"peak_rss_plan_{label}_rows",
            peaks,
            "MiB",
            f"after imports {planned['baseline_rss'] / MIB:.0f} MiB",
        )
        built = time.perf_counter()
        finished_now = finish_through_ledger(ledger, ws.upload_url)
        built = time.perf_counter() - built
        if finished_now != rows:
            raise RuntimeError(f"the ledger's batch steps finished {finished_now} of {rows} items")
        env = {
            "VIDEOFERRY_API_URL": ws.base_url,
            "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
            "VIDEOFERRY_TOKEN": ws.token,
        }
        options = {"inventory": str(inventory), "parent_id": ws.project_id, "ledger": str(ledger)}
        reruns = [measure({"job": "migrate", "options": options}, env)]
        calls = api_calls(ctl.requests(ws.workspace_id))  # those of the first rerun
        reruns += [measure({"job": "migrate", "options": options}, env) for _ in range(ROUNDS - 1)]
    rerun = reruns[0]
    finished = min(int(r["counts"].get("finished", 0)) for r in reruns)
    if finished != rows:
        raise RuntimeError(f"rerun left {finished} of {rows} items finished: {rerun['reasons']}")
    times = [float(r["seconds"]) for r in reruns]
    yield with_rounds(
        f"rerun_finished_{label}_seconds",
        times,
        "s",
        f"run_migration over a ledger whose {rows} items are all finished (by the ledger's batch steps in "
        f"{built:.0f} s, see README), {ROUNDS} times: {', '.join(f'{t:.3f}' for t in times)} s; "
        f"{len(calls)} API calls ({breakdown(calls)}) the first time; "
        f"peak RSS {max(r['peak_rss'] for r in reruns) / MIB:.0f} MiB",
    )

"""`videoferry apply` on a realistic mix: operations per minute against the limits' floor, calls per op."""

from __future__ import annotations

import concurrent.futures
import csv
import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.figures import Figure
from bench.ratelog import api_calls, earliest, refused
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, settings_for
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.apply.options import ApplyOptions
from videoferry.flows.apply.runner import run_apply


@dataclass(frozen=True)
class Sizes:
    """How big a run is: videos acted on, one copy / one cut per `every` videos, the time scale."""

    videos: int
    copy_every: int
    cut_every: int
    scale: int


#: 200 videos, each updated (tags) and given chapters; every 4th copied, every 4th (others) cut with a trim:
#: 500 operations, 650 API calls at the least, under the scaled per-minute limit (900): the per-second
#: window binds (300 videos met the 60 s window too, but made `make bench` longer than its 10 minutes). The
#: real limits (10/s, 300/min), the spec's 5 s poll rule and 2 s of processing are all scaled by `scale`
#: (limits x3 in emulator and client, times / 3), as in rate_cap.
FULL = Sizes(videos=200, copy_every=4, cut_every=4, scale=3)
QUICK = Sizes(videos=8, copy_every=4, cut_every=4, scale=3)
TRANSFERS = 4
REAL_POLL, REAL_PROCESSING = 5.0, 2.0
#: The write calls that take a snapshot GET first (the runner's PROCESSED_KINDS among this mix).
SNAPSHOT_WRITES = ("copy", "cut")
CHAPTERS = json.dumps([{"time": 0, "title": "Start"}, {"time": 0.5, "title": "Middle"}])
TRIM = json.dumps([{"start": 0.2, "length": 0.5}])


def _upload(ws: Workspace, ctl: EmulatorControl, count: int, data: bytes) -> list[str]:
    """`count` real videos in the workspace's project, uploaded directly (limits off), all done."""
    # A client of its own with an in-memory limiter far above anything: these calls are set-up, not measured.
    settings = settings_for(ws, 100_000, 10_000_000)
    with (
        VideoClient.from_settings(settings) as client,
        concurrent.futures.ThreadPoolExecutor(TRANSFERS) as pool,
    ):
        jobs = [
            pool.submit(
                client.uploads.single,
                parent_id=ws.project_id,
                title=f"bench-apply-{i:05d}",
                source=data,
                filename=f"clip-{i:05d}.mp4",
            )
            for i in range(1, count + 1)
        ]
        ids = [str(job.result().id) for job in jobs]
    deadline = time.monotonic() + 120.0
    while True:
        statuses = Counter(v["status"] for v in ctl.videos(ws))
        if statuses.get("done", 0) >= count:
            return ids
        if time.monotonic() > deadline or statuses.get("error") or statuses.get("aborted"):
            raise RuntimeError(f"the uploaded videos did not all end done: {dict(statuses)}")
        time.sleep(0.2)


def write_operations(path: Path, ids: Sequence[str], size: Sizes) -> Counter[str]:
    """The operations file (CSV, explicit ids): per video an update (tags) and chapters; every copy_every-th
    video copied, every cut_every-th (offset by one, so never the copied ones) cut with a trim."""
    rows: list[dict[str, str]] = []
    for n, video in enumerate(ids):
        rows.append({"op": "update", "id": f"tag-{n:05d}", "target": video, "tags": f"bench;batch-{n % 7}"})
        rows.append({"op": "chapters", "id": f"ch-{n:05d}", "target": video, "chapters": CHAPTERS})
        if n % size.copy_every == 0:
            rows.append({"op": "copy", "id": f"cp-{n:05d}", "target": video})
        if n % size.cut_every == 1:
            rows.append({"op": "cut", "id": f"cut-{n:05d}", "target": video, "trim": TRIM})
    columns = ["op", "id", "target", "tags", "chapters", "trim"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return Counter(r["op"] for r in rows)


def _write_kind(entry: dict[str, Any]) -> str:
    """copy, cut, chapters, ... for /v1/videos/{id}/<action>; update (PATCH) or delete on the video itself."""
    parts = str(entry.get("path", "")).strip("/").split("/")
    if len(parts) >= 4 and parts[:2] == ["v1", "videos"]:
        return parts[3]
    return {"PATCH": "update", "PUT": "update", "DELETE": "delete"}.get(str(entry.get("method")), "other")


def classify(calls: Sequence[dict[str, Any]]) -> Counter[str]:
    """API calls by role: writes (by kind), `snapshot` (the last GET of a video before a copy / cut of it),
    `poll` (every other GET of one video), `list`, `other`."""
    roles: Counter[str] = Counter()
    pending: dict[str, int] = {}  # video id -> GETs of it not yet known to be a snapshot
    for entry in sorted(calls, key=lambda e: float(e["time"])):
        method, path = str(entry.get("method")), str(entry.get("path", ""))
        parts = path.strip("/").split("/")
        if parts[:2] != ["v1", "videos"]:
            roles["other"] += 1
        elif len(parts) == 2:
            roles["list" if method == "GET" else "other"] += 1
        elif method == "GET" and len(parts) == 3:
            roles["poll"] += pending.get(parts[2], 0)  # an earlier GET not followed by a copy / cut
            pending[parts[2]] = 1
        elif method == "GET":
            roles["other"] += 1  # a sub-resource read (not in this mix)
        else:
            kind = _write_kind(entry)
            roles[f"write {kind}"] += 1
            if kind in SNAPSHOT_WRITES and pending.pop(parts[2], 0):
                roles["snapshot"] += 1
    roles["poll"] += sum(pending.values())
    return roles


def floor_seconds(
    writes: int, snapshots: int, polls: int, per_second: int, per_minute: int, processing: float
) -> float:
    """The fewest seconds any run of this mix needs: every call it cannot do without as early as both windows
    admit, and the last status read after the last processed result's processing."""
    least = writes + snapshots + polls
    last_write = earliest(least - polls, per_second, per_minute)
    return max(earliest(least, per_second, per_minute), last_write + processing)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Upload N real clips (not measured), then `run_apply` an operations file over them with the limits and
    times scaled; read the API calls apply made from the emulator's request log."""
    size = QUICK if cfg.quick else FULL
    per_second, per_minute = 10 * size.scale, 300 * size.scale
    poll, processing = REAL_POLL / size.scale, REAL_PROCESSING / size.scale
    root = cfg.subdir("apply-ops")
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        # Limits off while the videos are made; set_limits then also forgets the window's history.
        ws = ctl.create_workspace(
            rate_per_second=0,
            rate_per_minute=0,
            processing="timed",
            processing_seconds=processing,
            poll_rule_seconds=poll,  # the spec's 5 s scaled: the service's rule, stated in its answers
        )
        ids = _upload(ws, ctl, size.videos, clip_bytes(1.0))
        ops_path = root / "ops.csv"
        mix = write_operations(ops_path, ids, size)
        ctl.set_limits(ws, rate_per_second=per_second, rate_per_minute=per_minute)
        (root / "apply").mkdir()  # the ledger and the run's limiter file, apart from the set-up client's
        opts = ApplyOptions(
            ops=str(ops_path),
            ledger=str(root / "apply" / "ledger.db"),
            transfers=TRANSFERS,
            wait_timeout=300.0,
        )
        mark = time.time()
        started = time.perf_counter()
        outcome = run_apply(opts, settings_for(ws, per_second, per_minute))
        seconds = time.perf_counter() - started
        entries = ctl.requests(ws.workspace_id, since=mark)
    if outcome.exit_code != 0:
        raise RuntimeError(f"apply exited {outcome.exit_code}: {outcome.reasons + outcome.refused}")
    operations = sum(mix.values())
    done = outcome.counts.get("done", 0)
    calls = api_calls(entries)
    roles = classify(calls)
    writes = sum(n for k, n in roles.items() if k.startswith("write "))
    snapshots = sum(mix[k] for k in SNAPSHOT_WRITES)
    # At the least: one write per operation, one snapshot GET per copy / cut, one status read per cut (a
    # cut's video is processed again; a copy of a done video is done at once).
    floor = floor_seconds(operations, snapshots, mix["cut"], per_second, per_minute, processing)
    least = operations + snapshots + mix["cut"]
    rate, admitted = operations / seconds * 60.0, operations / floor * 60.0
    limits = f"limits {per_second}/s, {per_minute}/min = real x{size.scale}"
    what = ", ".join(f"{n} {k}" for k, n in mix.most_common())
    yield Figure(
        "apply_ops_per_minute",
        rate,
        "ops/min",
        f"{operations} operations ({what}) on {size.videos} videos, {done} done, in {seconds:.1f} s; the "
        f"{limits} admit {admitted:.0f} per minute = floor ({least} calls at the least in {floor:.1f} s); "
        f"ratio {rate / admitted:.2f}; poll {poll:.2f} s, processing {processing:.2f} s (real 5 s, 2 s / "
        f"{size.scale}), {TRANSFERS} transfers",
    )
    yield Figure(
        "apply_floor_ratio",
        seconds / floor,
        note=f"{seconds:.1f} s / {floor:.1f} s floor set by the {limits}; 1.0 = at the floor",
    )
    by_write = ", ".join(f"{n} {k[6:]}" for k, n in roles.most_common() if k.startswith("write "))
    other = f", {roles['other']} other" if roles["other"] else ""
    yield Figure(
        "apply_api_calls_per_op",
        len(calls) / operations,
        note=(
            f"calls by kind: {writes} writes ({by_write}), {roles['snapshot']} snapshot GETs, "
            f"{roles['poll']} polls, {roles['list']} lists{other}; 429s: {refused(entries)}; "
            f"{len(calls)} calls for {operations} operations; least {least / operations:.2f}"
        ),
    )

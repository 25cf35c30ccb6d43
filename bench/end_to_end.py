"""End-to-end time of whole migrations against the floor the limits set, with where the time goes."""

from __future__ import annotations

import concurrent.futures
import heapq
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import naive
from bench.api_calls import webhook_target
from bench.figures import Figure
from bench.prefect_server import PrefectServer
from bench.ratelog import api_calls, breakdown, earliest, kind, refusal_windows, refused
from bench.services import REPO, EmulatorProcess
from bench.timeline import CREATES, Timeline
from bench.workload import BenchConfig, clip_bytes, write_clips, write_inventory
from videoferry.emulator.control import Workspace

#: The real limits and times: 10/s, 300/min, the spec's 5 s poll interval, 2 s of processing per video.
PER_SECOND, PER_MINUTE, POLL, PROCESSING = 10, 300, 5.0, 2.0
TRANSFERS = 4
#: How `videoferry migrate` reaches Prefect: not at all (--no-prefect), a running server, or its own
#: temporary server (the CLI default when no PREFECT_API_URL is configured).
PATHS = {
    "plain": "--no-prefect",
    "prefect": "through Prefect, a Prefect server already running (PREFECT_API_URL)",
    "prefect_temporary": "through Prefect with its temporary server (the CLI default, no PREFECT_API_URL)",
    "webhooks": "--no-prefect --webhook-listen (statuses by webhook, claims confirmed by listing)",
}


@dataclass(frozen=True)
class Run:
    """One measured migration: items, limits scaled by `scale` (times divided by it), the path."""

    items: int
    scale: int
    path: str
    #: Service variants of the run's workspace (emulator/README.md), and the calls per video any client
    #: needs under them (tus-rate-limited: the init and the one PATCH of a small clip both count).
    variants: tuple[str, ...] = ()
    calls_per_video: int = 1
    #: processing-queue's processing_concurrency (only with that variant): videos processed at once.
    slots: int = 0
    #: A per-minute budget other than the spec's (both the emulator's and the client's), so that the
    #: per-second window binds over the whole run (a `_burst` run); 0 = the spec's x scale.
    per_minute: int = 0

    @property
    def name(self) -> str:
        suffix = "".join(f"_{v.replace('-', '_')}" for v in self.variants)
        return f"e2e_{self.items}_{self.path}{suffix}{'_burst' if self.per_minute else ''}"

    def limits(self) -> tuple[int, int]:
        return PER_SECOND * self.scale, self.per_minute or PER_MINUTE * self.scale

    def floor(self) -> float:
        """The fewest seconds any client that believes only the service needs: N creates and one list per
        100 videos inside the limits, the last list after the last video's processing. With statuses by
        polling the lists read the statuses; with webhooks they confirm the claims (a webhook is a claim
        until the service confirms it), so both paths have this one floor (polling_floor). Under the
        processing queue the last video is done no sooner than the queue lets it (queue_done)."""
        if self.queued():
            per_second, per_minute = self.limits()
            lists = earliest(
                self.items * self.calls_per_video + math.ceil(self.items / 100), per_second, per_minute
            )
            return max(lists, self.queue_done())
        return self.polling_floor()

    def queued(self) -> bool:
        """Whether the run's workspace processes through the processing-queue variant."""
        return "processing-queue" in self.variants

    def queue_done(self, creates: list[float] | None = None) -> float:
        """When the queue's last video is done at the earliest: each video enters it at its create (at
        `creates`, seconds; else as early as the limits allow) and takes a free slot in turn for the
        processing time."""
        per_second, per_minute = self.limits()
        if creates is None:
            creates = [
                earliest(n * self.calls_per_video, per_second, per_minute) for n in range(1, self.items + 1)
            ]
        processing = PROCESSING / self.scale
        free = [0.0] * max(1, self.slots)
        done = 0.0
        for arrives in sorted(creates):
            start = max(arrives, heapq.heappop(free))
            heapq.heappush(free, start + processing)
            done = max(done, start + processing)
        return done

    def polling_floor(self) -> float:
        per_second, per_minute = self.limits()
        creates = self.items * self.calls_per_video
        return max(
            earliest(creates + math.ceil(self.items / 100), per_second, per_minute),
            earliest(creates, per_second, per_minute) + PROCESSING / self.scale,
        )

    def blind_floor(self) -> float:
        """N creates and the last video's processing, no read: the floor of a client that takes webhooks
        on trust (printed beside the floor, not measured against: this product confirms every claim)."""
        per_second, per_minute = self.limits()
        return earliest(self.items * self.calls_per_video, per_second, per_minute) + PROCESSING / self.scale


#: The per-minute budget of the `_burst` runs: 300 creates at 10/s take 30 s, so 6000/min never binds first.
BURST_PER_MINUTE = 6000

FULL = (
    Run(300, 1, "prefect_temporary"),
    Run(300, 1, "webhooks"),
    Run(300, 1, "plain"),
    Run(300, 1, "plain", ("tus-rate-limited",), calls_per_video=2),
    Run(3000, 5, "plain"),
    Run(3000, 5, "prefect"),
    Run(300, 1, "plain", per_minute=BURST_PER_MINUTE),
    Run(300, 1, "prefect", per_minute=BURST_PER_MINUTE),
)
QUICK = (
    Run(5, 1, "plain"),
    Run(5, 1, "webhooks"),
    Run(5, 1, "plain", ("tus-rate-limited",), 2),
    Run(30, 1, "plain", per_minute=BURST_PER_MINUTE),
)
NAIVE_ITEMS, QUICK_NAIVE_ITEMS = 6, 2


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "videoferry"
    return [str(script)] if script.exists() else [sys.executable, "-m", "videoferry.flows.cli"]


def migrate_command(
    ws: Workspace,
    inventory: Path,
    ledger: Path,
    workdir: Path,
    prefect: bool,
    *,
    prefect_env: dict[str, str] | None = None,
    scale: int = 1,
    webhook_listen: str | None = None,
    per_minute: int = 0,
) -> tuple[list[str], dict[str, str]]:
    """`videoferry migrate` as a user runs it (default options but the ledger path) and its environment.

    prefect_env: reach that running Prefect server; without it a Prefect run starts its temporary server.
    scale: the client's limits x scale (the emulator's are set to match); the poll interval stays 5 s.
    per_minute: the client's per-minute limit instead of the spec's x scale (a `_burst` run).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        VIDEOFERRY_API_URL=ws.base_url,
        VIDEOFERRY_UPLOAD_URL=ws.upload_url,
        VIDEOFERRY_TOKEN=ws.token,
        VIDEOFERRY_RATE_PER_SECOND=str(PER_SECOND * scale),
        VIDEOFERRY_RATE_PER_MINUTE=str(per_minute or PER_MINUTE * scale),
        PREFECT_HOME=str(workdir / "prefect-home"),
        PREFECT_LOGGING_LEVEL="WARNING",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="90",
    )
    env.update(prefect_env or {})
    command = [
        *_cli(),
        "migrate",
        str(inventory),
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(ledger),
        "--transfers",
        str(TRANSFERS),
        "--poll-interval",
        f"{POLL:g}",  # the spec's 5 s is also the CLI's least; only the limits and processing scale
        "--prefect" if prefect else "--no-prefect",
    ]
    if webhook_listen:
        command += ["--webhook-listen", webhook_listen]
    return command, env


def run_command(command: list[str], env: dict[str, str]) -> float:
    """Run `videoferry migrate` (migrate_command) in a new process: its seconds; exit status 1 or 2 fails."""
    started = time.perf_counter()
    proc = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"videoferry migrate exited {proc.returncode}: {' | '.join(tail)}")
    return elapsed


def measure_run(
    run: Run, emu: EmulatorProcess, root: Path, data: bytes, server: PrefectServer | None
) -> tuple[float, Timeline, list[Figure]]:
    """One run in a fresh workspace: its seconds, the floor ratio and the breakdown."""
    ctl = emu.ctl()
    per_second, per_minute = run.limits()
    ws = ctl.create_workspace(processing="timed", processing_seconds=PROCESSING / run.scale)
    ctl.set_limits(ws, rate_per_second=per_second, rate_per_minute=per_minute)
    if run.variants:
        slots = {"processing_concurrency": run.slots} if run.queued() else {}
        ctl.set_variants(ws, list(run.variants), **slots)
    clips = write_clips(root / f"clips-{run.items}", run.items, data)
    inventory = write_inventory(root / f"{run.name}.csv", [str(p) for p in clips])
    ledger = root / f"{run.name}.db"
    env = server.env if server is not None and run.path == "prefect" else None
    started = time.time()
    listen = webhook_target(ctl, ws) if run.path == "webhooks" else None
    prefect = run.path not in ("plain", "webhooks")
    command, environment = migrate_command(
        ws,
        inventory,
        ledger,
        root,
        prefect,
        prefect_env=env,
        scale=run.scale,
        webhook_listen=listen,
        per_minute=run.per_minute,
    )
    seconds = run_command(command, environment)
    entries = ctl.requests(ws.workspace_id)
    timeline = Timeline.read(started, started + seconds, entries, ledger)
    calls = api_calls(entries)
    floor = run.floor()
    scaled = (
        f" = real x{run.scale}, poll {POLL:g} s, processing {PROCESSING / run.scale:g} s"
        if run.scale > 1
        else f", poll {POLL:g} s, processing {PROCESSING:g} s"
    )
    variants = f", variants {', '.join(run.variants)}" if run.variants else ""
    if run.queued():
        variants += f" ({run.slots} processed at once)"
    what = (
        f"`videoferry migrate` {PATHS[run.path]}{variants}, {run.items} clips by tus, {TRANSFERS} transfers, "
        f"limits {per_second}/s {per_minute}/min{scaled}; {len(calls)} API calls ({breakdown(calls)}), "
        f"{refused(entries)} 429s ({refusal_windows(entries, per_second, per_minute)})"
    )
    queued = ", the queue's last video done" if run.queued() else ""
    floors = (
        f"the floor: {floor:.1f} s (creates and a list per 100 videos{queued}: with webhooks, the lists that "
        f"confirm the claims); a client that took webhooks on trust: {run.blind_floor():.1f} s (creates only)"
    )
    ratio = Figure(
        f"{run.name}_vs_floor",
        seconds / floor,
        note=f"{seconds:.1f} s / {floor:.1f} s floor set by the limits (the clock starts with the command); "
        f"{timeline.note()}; {floors}",
    )
    figures = [Figure(f"{run.name}_seconds", seconds, "s", what), ratio]
    if run.per_minute:
        figures += burst(run, calls, started)
    if run.queued():  # the tail against the queue's own floor, given when the creates actually went
        creates = [float(e["time"]) - started for e in calls if kind(e) in CREATES]
        tail = timeline.run_finished - timeline.last_create
        least = run.queue_done(creates) - timeline.last_create
        figures.append(
            Figure(
                f"{run.name}_tail_vs_queue_floor",
                tail / least,
                note=f"{tail:.1f} s from the last create to the run's end (closed in the ledger) / "
                f"{least:.1f} s the queue's own floor ({run.items} videos, {run.slots} at once, "
                f"{PROCESSING / run.scale:g} s each, entering it at their creates)",
            )
        )
    return seconds, timeline, figures


def burst(run: Run, calls: list[dict[str, Any]], started: float) -> list[Figure]:
    """Creates per second from the first create to the last, against the per-second limit: a `_burst` run's
    per-minute budget never binds, so a client at half the per-second limit reads about 0.5 here (at the
    spec's limits the minute window binds and its whole-run floor hides it: issue 49).

    `_vs_limit` = the least span those creates need / their span: the least counts every API call of the run
    up to them (the preflight list, the GET, any list between them) as a strict sliding-window service with
    the run's limits admits them (ratelog.earliest); 1.0 = every create as early as the limits allow.
    """
    per_second, per_minute = run.limits()
    times = sorted(float(e["time"]) for e in calls)
    creates = sorted(float(e["time"]) for e in calls if kind(e) in CREATES)
    first, last = times.index(creates[0]) + 1, times.index(creates[-1]) + 1
    span = creates[-1] - creates[0]
    least = earliest(last, per_second, per_minute) - earliest(first, per_second, per_minute)
    rate = (len(creates) - 1) / span if span > 0 else 0.0
    where = (
        f"{len(creates)} creates from {creates[0] - started:.1f} s to {creates[-1] - started:.1f} s after "
        f"the command's start ({span:.2f} s), limits {per_second}/s {per_minute}/min (the minute never binds)"
    )
    return [
        Figure(f"{run.name}_creates_per_second", rate, "creates/s", f"{where}; the limit {per_second}/s"),
        Figure(
            f"{run.name}_vs_limit",
            least / span if span > 0 else 0.0,
            note=f"{least:.2f} s the least span for those creates (calls {first} to {last} of the run as "
            f"early as {per_second}/s allows) / {span:.2f} s; 1.0 = at the per-second limit, 0.5 = half "
            "speed",
        ),
    ]


def _naive(emu: EmulatorProcess, root: Path, data: bytes, quick: bool) -> tuple[float, float, dict[str, str]]:
    """The naive script on a few clips in a workspace of its own: (seconds per item, poll, statuses)."""
    naive_items = QUICK_NAIVE_ITEMS if quick else NAIVE_ITEMS
    processing, poll = (0.5, 0.5) if quick else (PROCESSING, POLL)
    ws = emu.ctl().create_workspace(processing="timed", processing_seconds=processing)
    sample = write_clips(root / "naive", naive_items, data, prefix="naive")
    started = time.perf_counter()
    statuses = naive.migrate(sample, ws.base_url, ws.upload_url, ws.token, ws.project_id, poll)
    return (time.perf_counter() - started) / naive_items, poll, statuses


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """The runs of FULL (or QUICK); meanwhile the naive script on a few clips, multiplied out to 300."""
    runs = QUICK if cfg.quick else FULL
    root = cfg.subdir("end-to-end")
    data = clip_bytes()
    seconds: dict[str, float] = {}
    timelines: dict[str, Timeline] = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    first = server = None
    try:
        # The temporary server's database is created (and migrated) the first time Prefect runs with that
        # home: a one-off, done beforehand (the timed run is a user's second and later runs), while the
        # running server of the `prefect` runs starts.
        home = root / "prefect-home"
        if any(r.path == "prefect_temporary" for r in runs):
            first = pool.submit(lambda: PrefectServer(root, home=home).start())
        if any(r.path == "prefect" for r in runs):
            server = pool.submit(lambda: PrefectServer(root).start()).result()
            cfg.note(f"a Prefect server started in {server.start_seconds:.1f} s for the `prefect` runs")
        if first is not None:
            made = first.result()
            made.stop()
            cfg.note(f"Prefect's database made in {made.start_seconds:.1f} s for the temporary server")
        with EmulatorProcess(root) as emu:
            # The naive script mostly sleeps (a GET every 5 s): it runs beside the timed runs, in its own
            # workspace (limits are per token), instead of adding its half minute to the benchmark.
            sampled = pool.submit(_naive, emu, root, data, cfg.quick)
            for one in runs:
                taken, timelines[one.name], figures = measure_run(one, emu, root, data, server)
                seconds[one.name] = taken
                yield from figures
            per_item, poll, statuses = sampled.result()
    finally:
        if server is not None:
            server.stop()
        pool.shutdown(wait=True)
    naive_items = len(statuses)
    if any(s != "done" for s in statuses.values()):
        raise RuntimeError(f"the naive script ended with {statuses}")
    ours = runs[0]
    naive_total = per_item * ours.items
    yield Figure(
        f"e2e_{ours.items}_naive_seconds",
        naive_total,
        "s",
        f"bench/naive.py: one POST, GET every {poll:g} s until done, next; measured on {naive_items} items "
        f"({per_item:.2f} s each) x {ours.items} (sequential; `baseline` is the fair one)",
    )
    yield Figure(
        "e2e_naive_vs_videoferry",
        naive_total / seconds[ours.name],
        note=f"naive seconds / {ours.name} seconds; above 1 = videoferry faster",
    )
    yield from _prefect_cost(runs, timelines)
    for one in runs:
        default = Run(one.items, one.scale, one.path)
        if one.variants and default.name in seconds:
            yield Figure(
                f"{one.name}_vs_default",
                seconds[one.name] / seconds[default.name],
                note=f"{one.name} seconds / {default.name} seconds (the same run, the service's defaults); "
                f"floors {one.floor():.1f} s and {default.floor():.1f} s",
            )
    plain, prefect = seconds.get("e2e_3000_plain"), seconds.get("e2e_3000_prefect")
    if plain and prefect:
        yield Figure(
            "e2e_3000_prefect_vs_plain",
            prefect / plain,
            note="through a running Prefect server / --no-prefect, same items and limits; 1.05 = 5 % more",
        )


def _prefect_cost(runs: tuple[Run, ...], timelines: dict[str, Timeline]) -> Iterator[Figure]:
    """Prefect's fixed cost per run through it: its start (command -> first create) and its end (run closed in
    the ledger -> process exit), beside the same seconds of a --no-prefect run of the same size."""
    for one in runs:
        if one.path not in ("prefect", "prefect_temporary"):
            continue
        line = timelines[one.name]
        plain = next((timelines[r.name] for r in runs if r.items == one.items and r.path == "plain"), None)
        beside = (
            f"; --no-prefect at the same size: start {plain.first_create:.1f} s, end "
            f"{plain.exited - plain.run_finished:.1f} s"
            if plain is not None
            else ""
        )
        what = f"{one.items} items {PATHS[one.path]}"
        yield Figure(
            f"prefect_start_seconds_{one.items}_{one.path}",
            line.first_create,
            "s",
            f"{what}: command start -> first create (imports, the flow run's start, run opened at "
            f"{line.run_started:.1f} s){beside}",
        )
        yield Figure(
            f"prefect_end_seconds_{one.items}_{one.path}",
            line.exited - line.run_finished,
            "s",
            f"{what}: run closed in the ledger -> process exit (artifacts, the flow run's end, a temporary "
            f"server's stop){beside}",
        )

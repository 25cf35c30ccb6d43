"""A platform source: listing 10,000 videos from the Vimeo stand-in, and a 1,000-video migration out of it by
URL import against the target's floor (its rate limits: 10 calls a second, 300 a minute)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from bench.child import measure
from bench.figures import Figure
from bench.ratelog import api_calls
from bench.services import REPO, EmulatorProcess, _first_line, _stop
from bench.workload import MIB, BenchConfig, clip_bytes, environment, settings_for
from emulator.platforms.server import StandinControl
from flows.migrate.options import MigrateOptions
from flows.migrate.runner import run_migration

FULL = {"listed": 10_000, "migrated": 1_000}
QUICK = {"listed": 200, "migrated": 10}
#: The sizes of issue 49 (100,000 listed, 10,000 migrated: about 70 minutes at the target's limits), or any:
#: these variables override FULL's.
LISTED_ENV, MIGRATED_ENV = "VIDEOFERRY_BENCH_PLATFORM_LISTED", "VIDEOFERRY_BENCH_PLATFORM_MIGRATED"
#: The stand-in's rate limit while listing (calls per fixed 60 s window, as Vimeo's X-RateLimit headers
#: state it), 0 = none (the stand-in's default); Vimeo's own limit depends on the account's plan.
RATE_ENV = "VIDEOFERRY_BENCH_PLATFORM_RATE"
TRANSFERS = 4
#: The target's published limits (spec): the floor of a migration is the time its creates take under them.
PER_SECOND, PER_MINUTE = 10, 300


def floor_seconds(calls: int) -> float:
    """The least time `calls` calls take under 10 a second and 300 a minute (sliding windows)."""
    if calls <= 0:
        return 0.0
    minutes, rest = divmod(calls - 1, PER_MINUTE)
    return 60.0 * minutes + rest / PER_SECOND


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """List N videos (chapters left out: one call per page) and migrate M of them by URL import."""
    size = QUICK if cfg.quick else FULL
    listed = size["listed"] if cfg.quick else int(os.environ.get(LISTED_ENV) or size["listed"])
    migrated = size["migrated"] if cfg.quick else int(os.environ.get(MIGRATED_ENV) or size["migrated"])
    rate = 0 if cfg.quick else int(os.environ.get(RATE_ENV) or 0)
    root = cfg.subdir("platform")
    clip = base64.b64encode(clip_bytes()).decode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "standin", "vimeo", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        first = json.loads(_first_line(proc, "the Vimeo stand-in"))
        control = StandinControl(first["base_url"])
        rendition = {"quality": "source", "rendition": "source", "type": "source", "content_b64": clip}

        def seeded(count: int) -> list[dict[str, Any]]:
            return [
                {"id": str(1000 + i), "name": f"Talk {i}", "renditions": [rendition]} for i in range(count)
            ]

        # In a child process each (bench.child, job list), so its peak RSS is the listing's: a tenth of the
        # account first (memory beside which the full listing's growth is read), then all of it, timed.
        spec = {"job": "list", "base_url": first["base_url"], "token": first["token"]}
        control.seed(reset=True, videos=seeded(max(1, listed // 10)))
        small = measure(spec)
        control.seed(reset=True, videos=seeded(listed))
        if rate:
            control.configure(rate_limit=rate, rate_window=60)
        full = measure(spec, timeout=7200.0)
        seconds, calls = float(full["seconds"]), int(full["calls"])
        if full["videos"] != listed or small["videos"] != max(1, listed // 10):
            raise RuntimeError(f"listed {full['videos']} of {listed} and {small['videos']} of {listed // 10}")
        limit = (
            f"the stand-in's limit {rate} calls per 60 s window: at least "
            f"{(calls - 1) // rate * 60} s of windows for those calls"
            if rate
            else "no rate limit at the stand-in"
        )
        yield Figure(
            f"platform_listing_{listed}_seconds",
            seconds,
            "s",
            f"{listed} videos from the Vimeo stand-in (its own process) in {calls}"
            f" calls, {listed / seconds:.0f} videos/s, chapters left out; {limit}",
        )
        grown = (full["peak_rss"] - small["peak_rss"]) / (listed - small["videos"]) if listed > 1 else 0.0
        yield Figure(
            f"platform_listing_{listed}_peak_rss",
            full["peak_rss"] / MIB,
            "MiB",
            f"the listing in a child process: peak RSS, after imports {full['baseline_rss'] / MIB:.0f} MiB; "
            f"{small['peak_rss'] / MIB:.0f} MiB for {small['videos']} videos; {grown / 1024:.2f} KiB per "
            "video more (the listing keeps every video's record for the plan: memory grows with it, "
            "not with the pages)",
        )
        if rate:
            control.configure(rate_limit=0)
        control.seed(reset=True, videos=seeded(migrated))  # the migration's account: the first M videos
        with EmulatorProcess(root) as emu:
            ws = emu.ctl().create_workspace(rate_per_second=PER_SECOND, rate_per_minute=PER_MINUTE)
            opts = MigrateOptions(
                inventory="vimeo:",
                parent_id=ws.project_id,
                ledger=str(root / "ledger.db"),
                transfers=TRANSFERS,
                wait_timeout=3600.0,
                via="url",
            )
            env = {"VIDEOFERRY_VIMEO_API_URL": first["base_url"], "VIDEOFERRY_VIMEO_TOKEN": first["token"]}
            with environment(env):
                started = time.perf_counter()
                outcome = run_migration(opts, settings_for(ws, PER_SECOND, PER_MINUTE))
                seconds = time.perf_counter() - started
            if outcome.exit_code != 0:
                raise RuntimeError(f"the migration exited {outcome.exit_code}: {outcome.reasons[-3:]}")
            calls = len(api_calls(emu.ctl().requests(ws.workspace_id)))
            # Each video needs its create and one update: Vimeo's `anybody` maps to privacy anywhere, which
            # cannot travel with a create (the finish step sets it).
            floor = floor_seconds(2 * migrated)
            yield Figure(
                f"platform_url_migration_{migrated}_seconds",
                seconds,
                "s",
                f"{migrated} videos from vimeo: by URL import, {calls} API calls at the target",
            )
            yield Figure(
                f"platform_url_migration_{migrated}_vs_floor",
                seconds / floor if floor else 0.0,
                "",
                f"floor {floor:.1f} s: {migrated} creates and {migrated} updates (privacy) at {PER_SECOND}/s"
                f" and {PER_MINUTE}/min",
            )
        control.close()
    finally:
        _stop(proc)

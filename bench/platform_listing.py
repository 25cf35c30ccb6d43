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

from bench.figures import Figure
from bench.ratelog import api_calls
from bench.services import REPO, EmulatorProcess, _first_line, _stop
from bench.workload import BenchConfig, clip_bytes, environment, settings_for
from connectors.platforms.listing import list_source, parse_platform_source
from connectors.platforms.vimeo import VimeoClient
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
        control.seed(
            videos=[
                {"id": str(1000 + i), "name": f"Talk {i}", "renditions": [rendition]} for i in range(listed)
            ]
        )
        if rate:
            control.configure(rate_limit=rate, rate_window=60)
        with VimeoClient(first["base_url"], first["token"]) as client:
            started = time.perf_counter()
            listing = list_source(parse_platform_source("vimeo:"), client, chapters=False)
            seconds = time.perf_counter() - started
        limit = (
            f"the stand-in's limit {rate} calls per 60 s window: at least "
            f"{(listing.calls - 1) // rate * 60} s of windows for those calls"
            if rate
            else "no rate limit at the stand-in"
        )
        yield Figure(
            f"platform_listing_{listed}_seconds",
            seconds,
            "s",
            f"{len(listing.videos)} videos from the Vimeo stand-in (its own process) in {listing.calls}"
            f" calls, {len(listing.videos) / seconds:.0f} videos/s, chapters left out; {limit}",
        )
        if rate:
            control.configure(rate_limit=0)
        control.seed(  # the migration's account: the first M videos
            reset=True,
            videos=[
                {"id": str(1000 + i), "name": f"Talk {i}", "renditions": [rendition]} for i in range(migrated)
            ],
        )
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

"""A platform source: listing 10,000 videos from the Vimeo stand-in (alone and into the plan's rows: peak RSS
at a tenth and at all of them), and a 1,000-video migration out of it by URL import against the target's
floor (its rate limits: 10 calls a second, 300 a minute, or x VIDEOFERRY_BENCH_PLATFORM_SCALE)."""

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
from videoferry.emulator.platforms.server import StandinControl
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import run_migration

FULL = {"listed": 10_000, "migrated": 1_000}
QUICK = {"listed": 200, "migrated": 10}
#: The sizes of issue 49 (100,000 listed, 10,000 migrated: about 67 minutes at the target's real limits, 14
#: at x5), or any: these variables override FULL's.
LISTED_ENV, MIGRATED_ENV = "VIDEOFERRY_BENCH_PLATFORM_LISTED", "VIDEOFERRY_BENCH_PLATFORM_MIGRATED"
#: The target's limits x N in both the emulator's workspace and the client (the floor under the same
#: limits), as end_to_end's 3000-item runs; 1 (the default) is the spec's.
SCALE_ENV = "VIDEOFERRY_BENCH_PLATFORM_SCALE"
#: The stand-in's rate limit while listing: calls per fixed window of RATE_WINDOW seconds, as Vimeo's
#: X-RateLimit-* headers state it; 0 = none. Vimeo's guidelines (developer.vimeo.com/guidelines/rate-limiting,
#: as stored): "Authenticated calls are limited to 1500 requests per user per 5 minutes" (help.vimeo.com
#: article 12427783954065 says the limits are per user and plan; a 429 holds calls back up to a minute).
RATE_ENV = "VIDEOFERRY_BENCH_PLATFORM_RATE"
VIMEO_RATE, RATE_WINDOW = 1500, 300
TRANSFERS = 4
#: The target's published limits (spec): the floor of a migration is the time its creates take under them.
PER_SECOND, PER_MINUTE = 10, 300
#: The listing's account: each video's `source` file of this many bytes (the stand-in makes them; only the
#: migrated account carries the real clip, so a 100,000-video seed stays small).
LISTED_SIZE = 4661


def floor_seconds(calls: int, per_second: int = PER_SECOND, per_minute: int = PER_MINUTE) -> float:
    """The least time `calls` calls take under `per_second` a second and `per_minute` a minute (sliding
    windows; the spec's 10 and 300 by default)."""
    if calls <= 0:
        return 0.0
    minutes, rest = divmod(calls - 1, per_minute)
    return 60.0 * minutes + rest / per_second


def window_seconds(calls: int, rate: int, window: float) -> float:
    """The least time `calls` calls take under `rate` per fixed window of `window` seconds, from a window's
    start: every full window spent but the last (0 when they fit one)."""
    return (calls - 1) // rate * window if rate and calls > 0 else 0.0


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """List N videos (chapters left out: one call per page) alone and into the plan's rows, in child
    processes at N/10 and N, and migrate M of them by URL import."""
    size = QUICK if cfg.quick else FULL
    listed = size["listed"] if cfg.quick else int(os.environ.get(LISTED_ENV) or size["listed"])
    migrated = size["migrated"] if cfg.quick else int(os.environ.get(MIGRATED_ENV) or size["migrated"])
    scale = 1 if cfg.quick else int(os.environ.get(SCALE_ENV) or 1)
    rate = int(os.environ.get(RATE_ENV) or VIMEO_RATE)
    root = cfg.subdir("platform")
    clip = base64.b64encode(clip_bytes()).decode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "videoferry.flows.cli", "standin", "vimeo", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        first = json.loads(_first_line(proc, "the Vimeo stand-in"))
        control = StandinControl(first["base_url"])

        def seed(count: int, rendition: dict[str, Any]) -> None:
            control.seed(reset=True)  # no rate limit until configured
            for start in range(0, count, 10_000):  # in parts: one request per 10,000 videos
                part = range(start, min(count, start + 10_000))
                control.seed(
                    videos=[
                        {"id": str(1000 + i), "name": f"Talk {i}", "renditions": [rendition]} for i in part
                    ]
                )

        # Each in a child process (bench.platform_child), so its peak RSS is the listing's: a tenth of the
        # account first (memory beside which the full listing's growth is read), then all of it, timed.
        listed_rendition = {"quality": "source", "rendition": "source", "type": "source", "size": LISTED_SIZE}
        spec = {"base_url": first["base_url"], "token": first["token"]}
        small_count = max(1, listed // 10)
        measured: dict[tuple[str, int], dict[str, Any]] = {}
        for count in (small_count, listed):
            seed(count, listed_rendition)
            for job in ("stream", "rows"):
                if rate:  # each listing from a fresh window (a new limit: no calls counted yet)
                    control.configure(rate_limit=rate, rate_window=RATE_WINDOW)
                result = measure({**spec, "job": job}, timeout=7200.0, module="bench.platform_child")
                if result["videos"] != count:
                    raise RuntimeError(f"{job}: listed {result['videos']} of {count}")
                measured[job, count] = result
        full = measured["stream", listed]
        seconds, calls = float(full["seconds"]), int(full["calls"])
        least = window_seconds(calls, rate, RATE_WINDOW)
        limit = (
            f"the stand-in's limit {rate} calls per {RATE_WINDOW} s window (Vimeo's): the least its windows"
            f" allow for those calls {least:.0f} s{' (they fit one window)' if least == 0 else ''}"
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
        for job, name, what in (
            ("stream", "platform_listing", "the listing alone (each video handed on, none kept)"),
            ("rows", "platform_rows", "the listing into the plan's rows and origins (source_rows)"),
        ):
            big, small = measured[job, listed], measured[job, small_count]
            grown = (
                (big["peak_rss"] - small["peak_rss"]) / (listed - small_count)
                if listed > small_count
                else 0.0
            )
            yield Figure(
                f"{name}_{listed}_peak_rss",
                big["peak_rss"] / MIB,
                "MiB",
                f"{what} in a child process: peak RSS, after imports {big['baseline_rss'] / MIB:.0f} MiB;"
                f" {small['peak_rss'] / MIB:.1f} MiB for {small_count} videos;"
                f" {grown:.0f} bytes per video more",
            )
        # The migration's account: M videos, each with the real clip; no limit at the stand-in (its calls are
        # the listing's, one per page and one per video's chapters, and one per link resolved: 2 M + M / 100
        # in all, which Vimeo's 1,500 per 5 minutes would stretch to hours at M = 10,000).
        clip_rendition = {"quality": "source", "rendition": "source", "type": "source", "content_b64": clip}
        seed(migrated, clip_rendition)
        per_second, per_minute = PER_SECOND * scale, PER_MINUTE * scale
        with EmulatorProcess(root) as emu:
            ws = emu.ctl().create_workspace(rate_per_second=per_second, rate_per_minute=per_minute)
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
                outcome = run_migration(opts, settings_for(ws, per_second, per_minute))
                seconds = time.perf_counter() - started
            if outcome.exit_code != 0:
                raise RuntimeError(f"the migration exited {outcome.exit_code}: {outcome.reasons[-3:]}")
            calls = len(api_calls(emu.ctl().requests(ws.workspace_id)))
            # Each video needs its create and one update: Vimeo's `anybody` maps to privacy anywhere, which
            # cannot travel with a create (the finish step sets it).
            floor = floor_seconds(2 * migrated, per_second, per_minute)
            scaled = f" (the spec's x{scale} in the emulator and the client)" if scale > 1 else ""
            yield Figure(
                f"platform_url_migration_{migrated}_seconds",
                seconds,
                "s",
                f"{migrated} videos from vimeo: by URL import, {calls} API calls at the target, limits"
                f" {per_second}/s and {per_minute}/min{scaled}; the listing with chapters and each link"
                " resolved at its create included",
            )
            yield Figure(
                f"platform_url_migration_{migrated}_vs_floor",
                seconds / floor if floor else 0.0,
                "",
                f"floor {floor:.1f} s: {migrated} creates and {migrated} updates (privacy) at {per_second}/s"
                f" and {per_minute}/min{scaled}",
            )
        control.close()
    finally:
        _stop(proc)

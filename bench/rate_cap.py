"""Share of the rate cap a long migration uses, its busiest 1 s and 60 s windows, and the 429s it got."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from bench.figures import Figure
from bench.ratelog import (
    api_calls,
    breakdown,
    capacity,
    earliest,
    kind,
    max_in_window,
    refusal_windows,
    refused,
    tightest_span,
)
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, free_port, settings_for, write_clips, write_inventory
from videoferry.flows.migrate.options import MigrateOptions
from videoferry.flows.migrate.runner import run_migration

#: The real limits are 10/s and 300/min; both the emulator and the client get them times SCALE.
FULL = {"scale": 3, "minutes": 1.5, "poll": 5.0}
QUICK = {"scale": 3, "minutes": 0.1, "poll": 1.0}
TRANSFERS = 8


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate more tiny real clips than the cap lets through in a minute (limits scaled up in emulator and
    client alike, statuses by webhook); compare the API calls the emulator admitted from the first call to
    the last with the most a strict sliding-window service with those limits admits over the same span.
    """
    size = QUICK if cfg.quick else FULL
    per_second, per_minute = 10 * int(size["scale"]), 300 * int(size["scale"])
    items = max(10, int(per_minute * size["minutes"]))
    root = cfg.subdir("rate-cap")
    clips = write_clips(root / "clips", items, clip_bytes())
    inventory = write_inventory(root / "inventory.csv", [str(p) for p in clips])
    port = free_port()
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        ws = ctl.create_workspace(
            rate_per_second=per_second, rate_per_minute=per_minute, poll_rule_seconds=size["poll"]
        )
        # The service posts media.update.status to the workspace's configured URL (the dashboard's setting;
        # the emulator's control call here); the run listens there, so polls drop to a rare safety net.
        ctl.set_webhook(ws, f"http://127.0.0.1:{port}/")
        opts = MigrateOptions(
            inventory=str(inventory),
            parent_id=ws.project_id,
            ledger=str(root / "ledger.db"),
            transfers=TRANSFERS,
            wait_timeout=600.0,
            webhook_listen=f"127.0.0.1:{port}",
        )
        outcome = run_migration(opts, settings_for(ws, per_second, per_minute))
        ended = time.time()
        entries = ctl.requests(ws.workspace_id)
    calls = api_calls(entries)
    times = sorted(float(e["time"]) for e in calls)
    complete = int(outcome.summary.get("complete", 0))
    done = f"{items} items, {complete} done, {TRANSFERS} transfers, statuses by webhook"
    yield share_figure(calls, per_second, per_minute, ended, done)
    yield from peak_figures(times, per_second, per_minute)
    yield Figure(
        "rate_cap_429s",
        refused(entries),
        note=(f"429 answers in the run (should be 0): {refusal_windows(entries, per_second, per_minute)}"),
    )


def share_figure(
    calls: list[dict[str, Any]], per_second: int, per_minute: int, ended: float, done: str
) -> Figure:
    """Calls / the limits' ceiling over the whole run (first call to last), with what the tail costs."""
    times = sorted(float(e["time"]) for e in calls)
    creates = [float(e["time"]) for e in calls if kind(e) in ("init", "create")]
    whole = times[-1] - times[0] if len(times) > 1 else 0.0
    ceiling = capacity(whole, per_second, per_minute)
    floor = earliest(len(times), per_second, per_minute)
    last_create = max(creates) if creates else times[-1]
    after = [e for e in calls if float(e["time"]) > last_create]
    to_create = last_create - times[0]
    to_end = ended - times[0]
    return Figure(
        "rate_cap_share",
        len(times) / max(ceiling, 1),
        note=(
            f"{len(times)} API calls ({breakdown(calls)}) from the first call to the last ({whole:.1f} s); "
            f"the limits ({per_second}/s, {per_minute}/min = real x{per_second // 10}) admit at most "
            f"{ceiling} in that span; the least time for {len(times)} calls is {floor:.1f} s (time ratio "
            f"{floor / max(whole, 1e-9):.2f}); tail after the last create: {len(after)} calls in "
            f"{whole - to_create:.1f} s; up to the last create {len(times) - len(after)} calls = "
            f"{(len(times) - len(after)) / max(capacity(to_create, per_second, per_minute), 1):.2f}; "
            f"to the run's end ({to_end:.1f} s, the last webhook) "
            f"{len(times) / max(capacity(to_end, per_second, per_minute), 1):.2f}; {done}"
        ),
    )


def peak_figures(times: list[float], per_second: int, per_minute: int) -> Iterator[Figure]:
    """The busiest 1 s and 60 s windows at the service, and the closest the arrivals came to a refusal."""
    # The notes carry the exact counts (the value is rounded when printed): `busiest ...: 30 calls / 30`.
    for name, width, limit in (("second", 1.0, per_second), ("minute", 60.0, per_minute)):
        peak = max_in_window(times, width)
        span = tightest_span(times, limit)
        closest = f"; tightest {limit + 1} arrivals span {span:.3f} s" if span is not None else ""
        yield Figure(
            f"rate_cap_peak_{name}",
            peak / limit,
            note=f"busiest {width:g} s window at the service{closest}: {peak} calls / {limit}",
        )

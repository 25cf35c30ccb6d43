"""Share of the rate cap a long migration uses, its busiest 1 s and 60 s windows, and the 429s it got."""

from __future__ import annotations

from collections.abc import Iterator

from bench.figures import Figure
from bench.ratelog import api_calls, capacity, kind, max_in_window, refusal_windows, refused
from bench.services import EmulatorProcess
from bench.workload import BenchConfig, clip_bytes, settings_for, write_clips, write_inventory
from flows.options import MigrateOptions
from flows.runner import run_migration

#: The real limits are 10/s and 300/min; both the emulator and the client get them times SCALE.
FULL = {"scale": 3, "minutes": 1.5, "poll": 5.0}
QUICK = {"scale": 3, "minutes": 0.1, "poll": 1.0}
TRANSFERS = 8


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate more tiny real clips than the cap lets through in a minute (limits scaled up in emulator and
    client alike); compare the API calls the emulator admitted with the most a strict sliding-window service
    with those limits admits over the same span.
    """
    size = QUICK if cfg.quick else FULL
    per_second, per_minute = 10 * int(size["scale"]), 300 * int(size["scale"])
    items = max(10, int(per_minute * size["minutes"]))
    root = cfg.subdir("rate-cap")
    clips = write_clips(root / "clips", items, clip_bytes())
    inventory = write_inventory(root / "inventory.csv", [str(p) for p in clips])
    with EmulatorProcess(root) as emu:
        ctl = emu.ctl()
        ws = ctl.create_workspace(rate_per_second=per_second, rate_per_minute=per_minute)
        opts = MigrateOptions(
            inventory=str(inventory),
            parent_id=ws.project_id,
            ledger=str(root / "ledger.db"),
            transfers=TRANSFERS,
            poll_interval=size["poll"],
            wait_timeout=600.0,
        )
        outcome = run_migration(opts, settings_for(ws, per_second, per_minute))
        entries = ctl.requests(ws.workspace_id)
    calls = api_calls(entries)
    times = sorted(float(e["time"]) for e in calls)
    creates = [float(e["time"]) for e in calls if kind(e) in ("init", "create")]
    # The transfer phase: from the first API call to the last create. After it only the status polls are
    # left (one list per poll interval, by design), so the cap cannot be used and is not counted.
    phase = [t for t in times if t <= max(creates)] if creates else times
    span = phase[-1] - phase[0] if len(phase) > 1 else 0.0
    ceiling = capacity(span, per_second, per_minute)
    whole = times[-1] - times[0] if len(times) > 1 else 0.0
    complete = int(outcome.summary.get("complete", 0))
    limits = f"{per_second}/s, {per_minute}/min = real x{size['scale']}"
    yield Figure(
        "rate_cap_share",
        len(phase) / max(ceiling, 1),
        note=(
            f"{len(phase)} API calls from the first call to the last create ({span:.1f} s); the limits "
            f"({limits}) admit at most {ceiling} in that span; whole run {len(calls)} calls in {whole:.1f} s "
            f"= {len(calls) / max(capacity(whole, per_second, per_minute), 1):.2f}; {items} items, "
            f"{complete} done, {TRANSFERS} transfers"
        ),
    )
    # The notes carry the exact counts (the value is rounded when printed): `busiest ...: 30 calls / 30`.
    peak_second, peak_minute = max_in_window(times, 1.0), max_in_window(times, 60.0)
    yield Figure(
        "rate_cap_peak_second",
        peak_second / per_second,
        note=f"busiest 1 s window at the service: {peak_second} calls / {per_second}",
    )
    yield Figure(
        "rate_cap_peak_minute",
        peak_minute / per_minute,
        note=f"busiest 60 s window at the service: {peak_minute} calls / {per_minute}",
    )
    yield Figure(
        "rate_cap_429s",
        refused(entries),
        note=f"429 answers in the run (should be 0): {refusal_windows(entries, per_second, per_minute)}",
    )

"""`python -m bench.fault_alone DIR`: the baseline's faulted videoferry run alone, its gaps and lookups told.

The baseline's `videoferry migrate` under chaos seed 1's faults (bench/baseline.videoferry_run: 300 clips, its
own emulator, then the rerun), without the careful script beside it; it keeps the request log
(DIR/requests.json) and the ledger (DIR/videoferry.db), and prints where the time went (bench/fault_time.py),
every gap of 1 s or more with the API calls of the minute before its end (about 300: the minute's budget),
and how long after its loss each lost create answer was settled (from the ledger journal's times).
Run it from two work trees at once to compare two commits under the same load.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.baseline import FULL, PER_MINUTE, PER_SECOND, videoferry_run
from bench.fault_time import IDLE_GAP
from bench.fault_time import breakdown as where_time_went
from bench.ratelog import breakdown, kind
from bench.services import EmulatorProcess
from bench.workload import clip_bytes, write_clips, write_inventory

#: The journal's note of a lookup too early to believe "not there" (tasks/migrate/reconcile.locate).
POSTPONED = "reconcile postponed"


def gaps(entries: list[dict[str, Any]], started: float) -> list[str]:
    """Every gap of IDLE_GAP or more: when, how long, the requests around it, the minute's calls before."""
    ordered = sorted(entries, key=lambda e: float(e["time"]))
    calls = [float(e["time"]) for e in ordered if e.get("api")]
    lines = []
    for a, b in zip(ordered, ordered[1:], strict=False):
        begin, end = float(a["time"]), float(b["time"])
        if end - begin >= IDLE_GAP:
            minute = sum(1 for t in calls if end - 60 <= t < end)
            lines.append(
                f"{end - begin:5.1f} s at {begin - started:6.1f} s after {kind(a)} {a.get('status')}, "
                f"ended by {kind(b)} {b.get('status')}; {minute} API calls in the minute before its end"
            )
    return lines


def settle_seconds(ledger: Path) -> list[float]:
    """For each lost create answer looked up too early: seconds from its first postponement to its verdict."""
    postponed: dict[str, float] = {}
    settled = []
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT time, key, from_state, message FROM events ORDER BY event_id").fetchall()
    for when, key, before, message in rows:
        moment = datetime.fromisoformat(when).timestamp()
        text = message or ""
        if text.startswith(POSTPONED):
            postponed.setdefault(key, moment)
        elif before == "creating" and text.startswith("reconcile:") and key in postponed:
            settled.append(moment - postponed.pop(key))
    return settled


def main(out: Path) -> None:
    """Run, keep, print."""
    out.mkdir(parents=True, exist_ok=True)
    clips = write_clips(out / "clips", FULL.items, clip_bytes())
    inventory = write_inventory(out / "inventory.csv", [str(p) for p in clips])
    with EmulatorProcess(out) as emu:
        ws = emu.ctl().create_workspace(
            rate_per_second=PER_SECOND,
            rate_per_minute=PER_MINUTE,
            processing="timed",
            processing_seconds=FULL.processing,
        )
        faulted, rerun = videoferry_run(emu.base_url, ws, inventory, clips, out)
    (out / "requests.json").write_text(json.dumps({"started": faulted.started, "entries": faulted.entries}))
    calls = faulted.calls
    print(f"{faulted.seconds:.1f} s, {faulted.detail}; {len(calls)} calls ({breakdown(calls)})")
    print(f"duplicates {faulted.duplicates}, lost {len(faulted.lost())}, after the rerun {len(rerun.lost())}")
    print(where_time_went(faulted.entries, faulted.started, faulted.seconds, (PER_SECOND, PER_MINUTE))[1])
    print("\n".join(gaps(faulted.entries, faulted.started)))
    waits = settle_seconds(out / "videoferry.db")
    if len(waits) >= 2:
        tenth = statistics.quantiles(waits, n=10)
        print(
            f"{len(waits)} lost create answers settled, seconds after the loss: median "
            f"{statistics.median(waits):.0f}, 90th percentile {tenth[-1]:.0f}, longest {max(waits):.0f}"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m bench.fault_alone DIR")
    main(Path(sys.argv[1]))

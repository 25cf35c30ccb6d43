"""The cost of a remote ledger: one migrate with --ledger s3:// (moto) against the same with a local ledger.

Every request moto receives is counted (its recorder: the lock's requests and Litestream's), by method.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.archive_copy import _s3_client
from bench.figures import Figure
from bench.services import EmulatorProcess, MotoProcess
from bench.workload import BenchConfig, clip_bytes, environment, settings_for, write_clips, write_inventory
from videoferry.connectors.ledger_lease import LOCK_SUFFIX

BUCKET = "videoferry-ledger-bench"
FULL_ITEMS, QUICK_ITEMS = 100, 5
#: Each way runs this often, alternating (local, remote, local, ...); the best is reported.
ROUNDS = 2
UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE = 10_000, 600_000


def _recorded(moto: MotoProcess) -> Counter[str]:
    """The requests moto recorded since the last reset, by method, and those of the lock (`lock` counts)."""
    answer = httpx.get(f"{moto.endpoint}/moto-api/recorder/download-recording", timeout=60.0)
    answer.raise_for_status()
    calls: Counter[str] = Counter()
    for entry in _entries(answer.text):
        calls[entry["method"]] += 1
        calls["lock"] += LOCK_SUFFIX in entry["url"].split("?", 1)[0]
    return calls


def _entries(text: str) -> list[dict[str, Any]]:
    """moto's recording, one JSON object after another: mostly a line each, but requests recorded at once
    can share a line (a run of bench-alone failed on `Extra data` there): the objects decoded in turn."""
    decoder = json.JSONDecoder()
    entries: list[dict[str, Any]] = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return entries
        entry, at = decoder.raw_decode(text, at)
        entries.append(entry)


def _migrate_once(emu: EmulatorProcess, root: Path, items: int, ledger: str, n: int) -> tuple[float, int]:
    """One run_migration of `items` small clips into a fresh workspace; (wall seconds, exit status)."""
    from videoferry.flows.migrate.options import MigrateOptions
    from videoferry.flows.migrate.runner import run_migration

    ws = emu.ctl().create_workspace(
        processing="immediate",
        rate_per_second=UNLIMITED_PER_SECOND,
        rate_per_minute=UNLIMITED_PER_MINUTE,
        poll_rule_seconds=0.2,
    )
    clips = write_clips(root / f"clips-{n}", items, clip_bytes())
    inventory = write_inventory(root / f"inventory-{n}.csv", [str(p) for p in clips])
    opts = MigrateOptions(inventory=str(inventory), parent_id=ws.project_id, ledger=ledger, transfers=4)
    started = time.perf_counter()
    outcome = run_migration(opts, settings_for(ws, UNLIMITED_PER_SECOND, UNLIMITED_PER_MINUTE))
    seconds = time.perf_counter() - started
    if outcome.exit_code != 0:
        raise RuntimeError(f"migrate with ledger {ledger}: exit {outcome.exit_code}: {outcome.reasons[:3]}")
    return seconds, outcome.exit_code


def _rounds(seconds: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in seconds)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate the same number of small clips with a local ledger and with an S3 ledger, alternating."""
    items = QUICK_ITEMS if cfg.quick else FULL_ITEMS
    root = cfg.subdir("remote_ledger")
    local: list[float] = []
    remote: list[float] = []
    calls: list[Counter[str]] = []
    recording = {"MOTO_RECORDER_FILEPATH": str(root / "moto-recording.jsonl")}  # not in the current folder
    with (
        environment(recording),
        EmulatorProcess(root) as emu,
        MotoProcess(root) as moto,
        environment({**moto.env, "VIDEOFERRY_WORKDIR": str(root / "workdir")}),
    ):
        _s3_client(moto).create_bucket(Bucket=BUCKET)
        httpx.post(f"{moto.endpoint}/moto-api/recorder/start-recording", timeout=30.0).raise_for_status()
        for n in range(ROUNDS):
            local.append(_migrate_once(emu, root, items, str(root / f"local-{n}.db"), n)[0])
            httpx.post(f"{moto.endpoint}/moto-api/recorder/reset-recording", timeout=30.0).raise_for_status()
            remote.append(_migrate_once(emu, root, items, f"s3://{BUCKET}/bench/ledger-{n}", n + ROUNDS)[0])
            calls.append(_recorded(moto))
    best_local, best_remote = min(local), min(remote)
    totals = [sum(v for m, v in c.items() if m != "lock") for c in calls]
    per_run = calls[totals.index(min(totals))]
    total, lock = min(totals), per_run["lock"]
    methods = sorted(((m, c) for m, c in per_run.items() if m != "lock"), key=lambda kv: -kv[1])
    by_method = ", ".join(f"{m} {c}" for m, c in methods)
    yield Figure(
        "local_ledger_migrate_seconds",
        best_local,
        "s",
        f"run_migration of {items} clips ({len(clip_bytes()) // 1024} KiB each), local ledger, "
        f"best of {ROUNDS}: {_rounds(local)} s",
    )
    yield Figure(
        "remote_ledger_migrate_seconds",
        best_remote,
        "s",
        f"the same with --ledger s3:// (moto): lock, restore, Litestream replicating, settle; "
        f"best of {ROUNDS}: {_rounds(remote)} s",
    )
    yield Figure(
        "remote_ledger_overhead_seconds",
        best_remote - best_local,
        "s",
        f"remote / local {best_remote / best_local:.2f}",
    )
    yield Figure(
        "remote_ledger_s3_requests",
        total,
        "requests",
        f"every request moto received in one run (fewest of {ROUNDS} runs, counts "
        f"{', '.join(str(t) for t in totals)}): {by_method}; the lock's {lock}, Litestream's {total - lock}; "
        f"{total / best_remote:.1f} per second of run",
    )

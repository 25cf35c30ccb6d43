"""Many coordinators, one budget: `migrate --shard K/N` processes sharing one token through a real Redis."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.chaos.checks import rate_figures
from tests.flows.helpers import cli_argv, cli_env, clip_rows, write_inventory
from videoferry.core.item import in_shard, parse_shard
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger


def test_shards_split_keys_evenly_and_without_overlap() -> None:
    keys = [f"key-{i}" for i in range(3000)]
    shards = [{k for k in keys if in_shard(k, (s, 3))} for s in (1, 2, 3)]
    assert set().union(*shards) == set(keys)
    assert sum(len(s) for s in shards) == len(keys)  # every key in exactly one shard
    assert all(900 < len(s) < 1100 for s in shards), [len(s) for s in shards]
    assert parse_shard(" 2/3 ") == (2, 3)
    for bad in ("0/3", "4/3", "2", "a/b"):
        try:
            parse_shard(bad)
        except ValueError as exc:
            assert bad in str(exc)
        else:
            raise AssertionError(f"{bad} accepted")


def test_two_coordinators_share_one_budget_through_redis(
    tmp_path: Path, emu_control: EmulatorControl, clip_factory, redis_url: str
) -> None:
    # A workspace with limits low enough that two unshared budgets would exceed them.
    ws: Workspace = emu_control.create_workspace(rate_per_second=4, rate_per_minute=300)
    rows = clip_rows(clip_factory, 16, metadata=False)
    for row in rows[:4]:
        row["title"] = "Introduction"  # shared across both shards: each must still create under placeholders
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    env = cli_env(
        ws,
        VIDEOFERRY_LIMITER_URL=redis_url,
        VIDEOFERRY_RATE_PER_SECOND="4",
        VIDEOFERRY_RATE_PER_MINUTE="300",
    )
    procs = []
    # Each ledger in a folder of its own, as on two machines: only Redis can share the budget between them.
    ledgers = {k: tmp_path / f"machine{k}" / "ledger.db" for k in (1, 2)}
    for k in (1, 2):
        ledgers[k].parent.mkdir()
        args = [
            "migrate", str(inventory), "--no-prefect", "--parent-id", ws.project_id, "--shard", f"{k}/2",
            "--ledger", str(ledgers[k]), "--wait-timeout", "120", "--poll-interval", "5",
        ]  # fmt: skip
        pipe = subprocess.PIPE
        procs.append(subprocess.Popen(cli_argv(*args), env=env, stdout=pipe, stderr=pipe))
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[0][-2000:] + o[1][-2000:] for o in outputs]
    keys: list[set[str]] = []
    for k in (1, 2):
        with Ledger.open(ledgers[k], create=False) as book:
            items = book.items()
            assert {i.state for i in items} == {"finished"}
            keys.append({i.spec.key for i in items})
    assert keys[0] and keys[1] and not keys[0] & keys[1]
    assert len(keys[0] | keys[1]) == len(rows)
    videos = emu_control.videos(ws)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # one each, exact titles
    figures = rate_figures(emu_control, ws)
    assert figures.per_second <= 4 and figures.per_minute <= 300 and figures.refused_429 == 0, figures

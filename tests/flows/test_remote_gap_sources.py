"""The replication gap with results that look like their sources (issue 43): videos migrated with another
ledger, then copies, concats and cuts (or the same rows migrated again) on a remote ledger whose run is lost
in the gap; the rerun must adopt only what the lost run made (created after its gap mark), never an original
with the same title and place.

Before the gap mark, a rerun took each original for the copy it was looking for: it said every operation was
done while the service held fewer results than operations.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import cli_argv, cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.remote_helpers import assert_kept_out, kill_in_the_gap, remote_env, replica, rerun_until_free
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger


def migrated_elsewhere(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any, n: int
) -> list[dict[str, Any]]:
    """n clips migrated into the workspace's project with a local ledger of their own (not the one the
    operations use): their videos, oldest first."""
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, n, metadata=False))
    args = migrate_args(emu, inventory, tmp_path / "other-ledger.db", transfers=2, wait_timeout=120)
    done = run_cli(args, cli_env(emu), timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    videos = wait_done(emu_control, emu)
    assert len(videos) == n and all(v["status"] == "done" for v in videos)
    return sorted(videos, key=lambda v: v["created_at"])


def done_ops(ledger: Ledger) -> int:
    """How many calls the ledger knows were made (operations done)."""
    return len(ledger.ops(status="done"))


def made_ids(ledger: Ledger) -> set[str]:
    """The videos the ledger's operations made."""
    return {op.created_id for op in ledger.ops(status="done") if op.created_id}


def lose_and_rerun(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, args: list[str], url: str, s3_server: str
) -> tuple[str, set[str], set[str]]:
    """Run `args` on machine A, kill it in the gap (replication stalled: two calls at least the replica
    does not know), then rerun on machine B once the lease is out: B's output, the ids the replica missed,
    and the op keys whose intent the replica held without an outcome (the rerun settles those by their
    intent, not across the gap)."""
    first_dir = tmp_path / "machine-a"
    first_env = remote_env(cli_env(emu), first_dir)
    pid = kill_in_the_gap(cli_argv(*args), first_env, url, first_dir, done_ops, "call")
    (known, open_keys), _ = replica(
        url, s3_server, lambda book: (made_ids(book), {op.op_key for op in book.ops(status="intent")})
    )
    emu_control.clear_faults(emu)
    before = {v["id"] for v in emu_control.videos(emu)}
    env = remote_env(cli_env(emu), tmp_path / "machine-b")
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert_kept_out(rerun, refused, url, pid, args[0])
    return rerun.stdout + rerun.stderr, before - known, open_keys


@pytest.mark.long
def test_copies_into_their_own_project_lost_in_the_gap_are_each_made_once(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    s3_server: str,
    s3_bucket: str,
) -> None:
    originals = migrated_elsewhere(tmp_path, emu, emu_control, clip_factory, 8)
    url = f"s3://{s3_bucket}/ledgers/ops.db"
    rows = [
        {"op": "copy", "id": f"cp{i}", "target": v["id"], "parent_id": emu.project_id}
        for i, v in enumerate(originals)
    ]
    ops = write_ops(tmp_path / "ops.csv", rows)
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--transfers", "1", "--wait-timeout", "120"]
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "method": "POST", "path": "copy"}], seed=5)
    out, unknown, open_keys = lose_and_rerun(tmp_path, emu, emu_control, args, url, s3_server)
    copies_in_gap = unknown - {v["id"] for v in originals}
    assert len(copies_in_gap) >= 2, "the test made no gap: the replica knows every copy"
    assert "operations: 8 (8 done)" in out

    videos = wait_done(emu_control, emu)
    titles = Counter(v["title"] for v in videos)
    assert titles == Counter({v["title"]: 2 for v in originals})  # each original and exactly one copy
    (made, found, by_intent), why = replica(
        url,
        s3_server,
        lambda book: (
            made_ids(book),
            {
                op.created_id
                for op in book.ops(status="done")
                if "replication gap" in str((op.result or {}).get("detail"))
            },
            {op.created_id for op in book.ops(status="done") if op.op_key in open_keys},
        ),
    )
    assert why == ""
    assert len(made) == 8 and not made & {v["id"] for v in originals}  # no original taken for a copy
    assert copies_in_gap <= made  # what the lost run made was adopted, not made again
    # a copy the replica knew nothing of was found across the gap; one whose intent it held, by that intent
    assert copies_in_gap - by_intent <= found


@pytest.mark.long
def test_concat_and_cut_results_that_look_like_their_sources_across_the_gap(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    s3_server: str,
    s3_bucket: str,
) -> None:
    # whole-second timestamps on a clock 10 minutes behind ours; a cut makes a new video beside its source
    emu_control.set_variants(emu, ["whole-seconds", "clock-behind", "cut-new-video"])
    originals = migrated_elsewhere(tmp_path, emu, emu_control, clip_factory, 5)
    v0, v1, v2, v3, v4 = originals
    url = f"s3://{s3_bucket}/ledgers/ops.db"
    trim = '[{"start": 0.2, "length": 0.6}]'
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "concat", "id": "cj0", "target": v0["id"], "prepend": v1["id"]},
            {"op": "copy", "id": "cp2", "target": v2["id"], "parent_id": emu.project_id},
            {"op": "concat", "id": "cj3", "target": v3["id"], "append": v1["id"]},
            {"op": "cut", "id": "tr4", "target": v4["id"], "trim": trim},
            {"op": "copy", "id": "cp0", "target": v0["id"], "parent_id": emu.project_id},
        ],
    )
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--transfers", "1", "--wait-timeout", "120"]
    slow = [{"kind": "latency", "ms": 700, "method": "POST", "path": "copy|concat|cut"}]
    emu_control.set_faults(emu, slow, seed=7)
    out, unknown, _ = lose_and_rerun(tmp_path, emu, emu_control, args, url, s3_server)
    assert len(unknown - {v["id"] for v in originals}) >= 2, "the test made no gap"
    assert "operations: 5 (5 done)" in out

    videos = wait_done(emu_control, emu)
    titles = Counter(v["title"] for v in videos)
    # v0: itself, its concat, its copy; v1: only itself (a prepended / appended source); v2, v3, v4: itself
    # and one result (copy, concat, the cut's new video)
    expected = {v0["title"]: 3, v1["title"]: 1, v2["title"]: 2, v3["title"]: 2, v4["title"]: 2}
    assert titles == Counter(expected)
    cut = [v for v in videos if v["title"] == v4["title"] and v["id"] != v4["id"]]
    assert abs(cut[0]["duration"] - 0.6) < 0.15  # the cut's result, made once
    (states, made), why = replica(
        url, s3_server, lambda book: ({u.unit_key: u.state for u in book.units()}, made_ids(book))
    )
    assert set(states.values()) == {"done"} and why == ""
    assert len(made) == 5 and not made & {v["id"] for v in originals}


def test_a_migrate_lost_in_the_gap_never_adopts_a_video_another_ledger_made_from_the_same_row(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    s3_server: str,
    s3_bucket: str,
) -> None:
    # the same rows (titles, files, sizes) migrated into the same project with a ledger of its own first
    rows = clip_rows(clip_factory, 6, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    first = migrate_args(emu, inventory, tmp_path / "other-ledger.db", transfers=2, wait_timeout=120)
    done = run_cli(first, cli_env(emu), timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    originals = {v["id"] for v in wait_done(emu_control, emu)}
    assert len(originals) == len(rows)

    url = f"s3://{s3_bucket}/ledgers/library.db"
    args = migrate_args(emu, inventory, Path("unused"), transfers=2, wait_timeout=120)
    args[args.index("--ledger") + 1] = url
    emu_control.set_faults(emu, [{"kind": "bandwidth", "bytes_per_second": 60_000}], seed=3)
    first_dir = tmp_path / "machine-a"

    def with_video(book: Ledger) -> int:
        return sum(1 for i in book.items() if i.video_id)

    first_env = remote_env(cli_env(emu), first_dir)
    pid = kill_in_the_gap(cli_argv(*args), first_env, url, first_dir, with_video, "video")
    known, _ = replica(url, s3_server, lambda book: {i.video_id for i in book.items() if i.video_id})
    assert {v["id"] for v in emu_control.videos(emu)} - originals - known, "the test made no gap"
    emu_control.clear_faults(emu)
    env = remote_env(cli_env(emu), tmp_path / "machine-b")
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert_kept_out(rerun, refused, url, pid, "migrate")

    videos = wait_done(emu_control, emu)
    assert Counter(v["title"] for v in videos) == Counter(r["title"] for r in rows + rows)
    mine, why = replica(url, s3_server, lambda book: {i.video_id for i in book.items()})
    assert why == "" and len(mine) == len(rows) and not mine & originals  # its own videos, one per row

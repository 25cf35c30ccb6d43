"""A remote ledger across a machine's loss: kill -9 mid-run with replication stalled (a real gap: the service
has videos the replica does not know), the working folder deleted, the same command from another folder.

The gap is made certain, not left to timing: the run's Litestream is stopped (SIGSTOP) while the run
goes on creating, then both are killed. A rerun tried while the dead holder's lease runs is refused (exit 2,
naming it); the one admitted must name that unsettled holder, find every video the replica does not know by
listing, and end with one video per row.
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.helpers import cli_argv, cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.remote_helpers import (
    assert_kept_out,
    kill_in_the_gap,
    kill_run,
    local_copy,
    pause_replication,
    read_local,
    remote_env,
    replica,
    rerun_until_free,
    wait_for,
)
from tests.flows.test_archive import broadcast_world, objects, stored
from videoferry.connectors.ledger_lease import LockRecord
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger

VIDEO_STATES = ("uploading", "uploaded", "processing", "done", "finished")


def with_video(ledger: Ledger) -> set[str]:
    """Keys of the items the ledger knows a video of."""
    return {i.key for i in ledger.items(VIDEO_STATES) if i.video_id}


def lock_record(s3_server: str, url: str) -> LockRecord:
    bucket, key = url[len("s3://") :].split("/", 1)
    s3 = boto3.session.Session().client("s3", endpoint_url=s3_server, region_name="us-east-1")
    return LockRecord.from_bytes(s3.get_object(Bucket=bucket, Key=key + ".lock")["Body"].read(), url)


def test_migrate_killed_in_the_gap_then_rerun_elsewhere_makes_one_video_per_row(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_server: str,
    s3_bucket: str,
) -> None:
    rows = clip_rows(clip_factory, 10)
    rows[1]["title"] = rows[0]["title"]  # a shared title: created under placeholders, renamed by the finish
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    url = f"s3://{s3_bucket}/ledgers/library.db"
    args = migrate_args(emu, inventory, Path("unused"), transfers=2, wait_timeout=120)
    args[args.index("--ledger") + 1] = url
    first_dir, second_dir = tmp_path / "machine-a", tmp_path / "machine-b"
    emu_control.set_faults(emu, [{"kind": "bandwidth", "bytes_per_second": 60_000}], seed=3)
    first_env = remote_env(cli_env(emu), first_dir)
    pid = kill_in_the_gap(cli_argv(*args), first_env, url, first_dir, lambda b: len(with_video(b)), "video")

    known, why = replica(url, s3_server, lambda book: {i.video_id for i in book.items() if i.video_id})
    made = {v["id"] for v in emu_control.videos(emu)}
    assert made - known, "the test made no gap: the replica knows every video"
    assert "a run holds it now" in why or "did not settle" in why  # its lease runs, or ran out unsettled

    emu_control.clear_faults(emu)
    env = remote_env(cli_env(emu), second_dir)
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert_kept_out(rerun, refused, url, pid, "migrate")

    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # one video per row
    assert all(v["status"] == "done" for v in videos)
    notes, _ = replica(
        url,
        s3_server,
        lambda book: [
            e.message for e in book.events(limit=10_000) if "across the replication gap" in (e.message or "")
        ],
    )
    assert len(notes) >= len(made - known)  # every video the replica missed was found, not made again
    finished, why_after = replica(url, s3_server, lambda book: book.counts().get("finished", 0))
    assert finished == len(rows) and why_after == ""
    record = lock_record(s3_server, url)
    assert record.state == "free" and record.behind == ""  # everything looked up: the gap is closed
    assert emu.token not in rerun.stdout + rerun.stderr


def done_ops(ledger: Ledger) -> int:
    """How many calls the ledger knows were made (operations done)."""
    return len(ledger.ops(status="done"))


def known_videos(ledger: Ledger) -> set[str]:
    """Every video the ledger knows: the items', and what its operations created."""
    return {i.video_id for i in ledger.items() if i.video_id} | {
        op.created_id for op in ledger.ops(status="done") if op.created_id
    }


def migrated(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    url: str,
    endpoint: str,
    n: int,
) -> dict[str, str]:
    """n clips migrated into the workspace's project on the remote ledger (a clean run): key -> title."""
    rows = clip_rows(clip_factory, n, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    args = migrate_args(emu, inventory, Path("unused"), transfers=2, wait_timeout=120)
    args[args.index("--ledger") + 1] = url
    done = run_cli(args, remote_env(cli_env(emu), tmp_path / "migrating"), timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    keys, _ = replica(url, endpoint, lambda book: {i.key: i.spec.title for i in book.items()})
    wait_done(emu_control, emu)
    return keys


@pytest.mark.long
def test_apply_killed_in_the_gap_then_rerun_elsewhere_makes_each_result_once(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_server: str,
    s3_bucket: str,
) -> None:
    url = f"s3://{s3_bucket}/ledgers/library.db"
    keys = migrated(tmp_path, emu, emu_control, clip_factory, url, s3_server, 5)
    k0, k1, k2, k3, k4 = sorted(keys)
    trim = '[{"start": 0.2, "length": 0.6}]'
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "copy", "id": "cp0", "target": f"key:{k0}", "parent_id": emu.project_id},
            {"op": "copy", "id": "cp1", "target": f"key:{k1}", "parent_id": emu.project_id},
            {"op": "concat", "id": "cj", "target": f"key:{k2}", "prepend": f"key:{k4}"},
            {"op": "copy", "id": "cp3", "target": f"key:{k3}", "parent_id": emu.project_id},
            {"op": "cut", "id": "tr", "target": f"key:{k1}", "trim": trim},
        ],
    )
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--transfers", "1", "--wait-timeout", "120"]
    # Each create takes a while to answer, so the kill lands between calls while replication is stalled.
    slow = [{"kind": "latency", "ms": 700, "method": "POST", "path": "copy|concat"}]
    emu_control.set_faults(emu, slow, seed=5)
    first_dir = tmp_path / "machine-a"
    first_env = remote_env(cli_env(emu), first_dir)
    pid = kill_in_the_gap(cli_argv(*args), first_env, url, first_dir, done_ops, "call")
    known, _ = replica(url, s3_server, known_videos)
    made = {v["id"] for v in emu_control.videos(emu)}
    assert made - known, "the test made no gap: the replica knows every video"

    emu_control.clear_faults(emu)
    env = remote_env(cli_env(emu), tmp_path / "machine-b")
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert_kept_out(rerun, refused, url, pid, "apply")

    videos = wait_done(emu_control, emu)
    titles = [v["title"] for v in videos]
    # one copy of k0, k1 and k3, one concat result of k2 (titled as its target), nothing more
    assert sorted(titles) == sorted([*keys.values(), keys[k0], keys[k1], keys[k2], keys[k3]])
    trimmed = [v for v in videos if v["title"] == keys[k1] and abs(v["duration"] - 0.6) < 0.15]
    assert len(trimmed) == 1  # the cut kept 0.6 s of a 1 s clip, once
    states, why = replica(url, s3_server, lambda book: {u.unit_key: u.state for u in book.units()})
    assert set(states.values()) == {"done"} and why == ""
    (after, found), _ = replica(
        url,
        s3_server,
        lambda book: (
            known_videos(book),
            [
                op
                for op in book.ops(status="done")
                if "replication gap" in str((op.result or {}).get("detail"))
            ],
        ),
    )
    assert made - known <= after  # every result the replica missed is now the ledger's, none made twice
    assert (
        found
    )  # at least one found across the gap (one whose intent did reach S3 is settled as a lost answer)


def test_an_in_place_cut_is_sent_only_once_its_intent_is_in_s3_and_applied_once_after_a_kill(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_server: str,
    s3_bucket: str,
) -> None:
    url = f"s3://{s3_bucket}/ledgers/library.db"
    keys = migrated(tmp_path, emu, emu_control, clip_factory, url, s3_server, 1)
    (key,) = keys
    ops = write_ops(
        tmp_path / "ops.csv",
        [{"op": "cut", "id": "tr", "target": f"key:{key}", "trim": '[{"start": 0.2, "length": 0.6}]'}],
    )
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--wait-timeout", "120"]
    first_dir = tmp_path / "machine-a"
    proc = subprocess.Popen(
        cli_argv(*args),
        env=remote_env(cli_env(emu), first_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def open_intents(book: Ledger) -> list[str]:
        return [op.op_key or "" for op in book.ops(status="intent")]

    def cuts() -> list[dict]:
        return [
            r for r in emu_control.requests(emu.workspace_id) if r["method"] == "POST" and "cut" in r["path"]
        ]

    copy = local_copy(url, first_dir)
    try:
        wait_for(lambda: read_local(copy, lambda b: b.runs("running"), []), 60, "the run to start", proc)
        engine = pause_replication(proc)  # S3 out of reach from here on
        wait_for(lambda: "tr" in read_local(copy, open_intents, []), 60, "the cut's intent", proc)
        assert cuts() == []  # written locally, not in S3: the cut is not sent
        # From here the cut is made and its answer lost, and the video cannot be read (so the run cannot
        # settle the cut while it lives): the kill below lands while the cut's intent is open, by design.
        lost_answer: list[dict[str, Any]] = [
            {"kind": "drop_after_commit", "method": "POST", "path": "/cut"},
            {"kind": "error", "status": 503, "method": "GET", "path": "^/v1/videos/"},
        ]
        emu_control.set_faults(emu, lost_answer, seed=11)
        resumed = time.time()
        engine.send_signal(signal.SIGCONT)
        sent = wait_for(cuts, 60, "the cut to be sent once its intent is in S3", proc)
        assert sent[0]["time"] >= resumed
    except BaseException:
        proc.kill()
        raise
    kill_run(proc, engine)  # the machine is lost, its Litestream too: the kill is what ended the run
    assert "tr" in read_local(copy, open_intents, [])  # the run had not settled its cut
    in_s3, _ = replica(url, s3_server, open_intents)
    assert "tr" in in_s3  # the intent reached S3 before the call, its outcome never did
    shutil.rmtree(first_dir)
    emu_control.clear_faults(emu)
    videos = wait_done(emu_control, emu)  # the cut was committed before its request was logged
    assert sum(1 for v in videos if abs(v["duration"] - 0.6) < 0.15) == 1  # made, its answer lost

    env = remote_env(cli_env(emu), tmp_path / "machine-b")
    rerun, _ = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert len(cuts()) == 1  # settled by the snapshot: never cut again
    videos = wait_done(emu_control, emu)
    assert sum(1 for v in videos if abs(v["duration"] - 0.6) < 0.15) == 1  # trimmed once


def test_archive_killed_in_the_gap_then_rerun_elsewhere_adopts_complete_objects(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_server: str, s3_bucket: str
) -> None:
    world = broadcast_world(emu_control, emu, {"Nightly": 3, "Special": 2}, chat=2)
    url = f"s3://{s3_bucket}/ledgers/archive.db"
    args = ["archive", "--to", f"s3://{s3_bucket}/night/", "--project", emu.project_id]
    args += ["--ledger", url, "--transfers", "1", "--no-prefect"]
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "path": "^/media/"}], seed=9)
    first_dir = tmp_path / "machine-a"

    def copied(book: Ledger) -> int:
        return sum(1 for op in book.ops(status="done") if (op.op_key or "").endswith(":copy"))

    first_env = remote_env(cli_env(emu), first_dir)
    pid = kill_in_the_gap(cli_argv(*args), first_env, url, first_dir, copied, "copy")
    known, _ = replica(url, s3_server, copied)
    complete = {k for k in objects(s3_bucket) if k.startswith("night/") and k.endswith(".mp4")}
    assert len(complete) > known, "the test made no gap: the replica knows every copy"

    emu_control.clear_faults(emu)
    mark = time.time()
    env = remote_env(cli_env(emu), tmp_path / "machine-b")
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert_kept_out(rerun, refused, url, pid, "archive")
    truth = stored(emu_control, emu)
    files = objects(s3_bucket)
    for event_id, pairs in world.streams.items():
        for stream_id, video_id in pairs:
            body = files[f"night/{event_id}/{stream_id}/{video_id}.mp4"]
            assert hashlib.md5(body).hexdigest() == truth[video_id]["md5"]
    fetched = [r["path"] for r in emu_control.requests(since=mark) if r["path"].startswith("/media/")]
    for key in complete:  # a copy complete before the kill is never downloaded again
        video_id = key.rsplit("/", 1)[1].removesuffix(".mp4")
        assert not [p for p in fetched if video_id in p], key
    (adopted, gap_found), why = replica(url, s3_server, adoptions)
    assert adopted >= len(complete) - known and gap_found >= 1 and why == ""


def adoptions(book: Ledger) -> tuple[int, int]:
    """Copies adopted as complete objects (after an open intent or across the gap), and across the gap."""
    results = [op.result for op in book.ops(status="done") if isinstance(op.result, dict)]
    adopted = [r for r in results if r.get("adopted")]
    return len(adopted), sum(1 for r in adopted if "replication gap" in str(r.get("note")))

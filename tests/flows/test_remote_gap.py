"""A remote ledger across a machine's loss: kill -9 mid-run with replication stalled (a real gap: the service
has videos the replica does not know), the working folder deleted, the same command from another folder.

The replication gap is made certain, not left to timing: the run's Litestream is stopped (SIGSTOP) while the run
goes on creating, then both are killed. The rerun must be refused while the dead holder's lease runs (exit 2,
naming it), then find every video the replica does not know by listing, and end with one video per row.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import boto3

from connectors.ledger_lease import LockRecord
from emulator.control import EmulatorControl, Workspace
from state.ledger import Ledger
from tests.flows.helpers import cli_argv, cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.remote_helpers import (
    kill_run,
    local_copy,
    pause_replication,
    read_local,
    remote_env,
    replica,
    rerun_until_free,
    wait_for,
)

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
    proc = subprocess.Popen(
        cli_argv(*args),
        env=remote_env(cli_env(emu), first_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    copy = local_copy(url, first_dir)
    try:
        wait_for(lambda: len(read_local(copy, with_video, set())) >= 1, 120, "a first video", proc)
        engine = pause_replication(proc)
        at_pause = read_local(copy, with_video, set())
        wait_for(
            lambda: len(read_local(copy, with_video, set()) - at_pause) >= 2,
            120,
            "two more videos created while replication is stalled",
            proc,
        )
    except BaseException:
        proc.kill()
        raise
    kill_run(proc, engine)
    shutil.rmtree(first_dir)  # the machine and its disk are gone

    known, why = replica(url, s3_server, lambda book: {i.video_id for i in book.items() if i.video_id})
    made = {v["id"] for v in emu_control.videos(emu)}
    assert made - known, "the test made no gap: the replica knows every video"
    assert "a run holds it now" in why or "did not settle" in why  # its lease runs, or ran out unsettled

    emu_control.clear_faults(emu)
    env = remote_env(cli_env(emu), second_dir)
    rerun, refused = rerun_until_free(lambda: run_cli(args, env, timeout=300), 60)
    assert refused, "the dead holder's lease let a new run in at once"
    assert f"ledger {url} is in use by another run (host " in refused[0].stderr
    assert f"pid {proc.pid}" in refused[0].stderr and "run migrate" in refused[0].stderr
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]

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

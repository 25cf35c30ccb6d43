"""A holder that wakes after its lease: a run on a remote ledger whose whole process group is stopped
(SIGSTOP: a frozen container, a suspended machine) past its lease, the same command run from another folder
meanwhile, and the first woken (SIGCONT) while the second runs or after it ended.

The woken run must change nothing (its lease's deadline is checked right before each request that changes the
service, each intent and each destination write), end with exit status 1 naming its lease, and leave one
effect per row or operation; a third run that restores the replica has nothing left to do. Its calls wait in
the rate limiter (a slow rate), so at the stop some are admitted-to-be: without the check after admission
they would leave on waking.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import boto3
import pytest

from tests.connectors.waiting import poll
from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.backup_fixtures import make_library, media_gets
from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.pause_helpers import changes_since, start, take_over
from tests.flows.remote_helpers import remote_env, replica
from tests.flows.test_remote_gap import migrated
from videoferry.emulator.control import EmulatorControl, Workspace

#: The stopped run's rate: its calls queue in the limiter, so some wait there when it is stopped.
SLOW = {"VIDEOFERRY_RATE_PER_SECOND": "1"}
LOST = ("could not renew its lease", "lost its lock")
WHEN = ["during", "after"]
#: make test runs migrate woken during the second run; the other five (tens of seconds each) run in make chaos
#: (marker `long`), as do all but migrate's of tests/flows/test_remote_s3_frozen.py.
WHEN_IN_MAKE_TEST = ["during", pytest.param("after", marks=pytest.mark.long)]


def lost_its_lease(code: int, output: str) -> None:
    assert code == 1, output[-3000:]
    assert any(words in output for words in LOST), output[-3000:]


def pause_take_over_wake(
    args: list[str],
    emu: Workspace,
    url: str,
    tmp_path: Path,
    *,
    when: str,
    progress: Callable[[], int],
    quiet: Quiet,
) -> None:
    """Machine a runs args until progress() counts 2 of its effects (a quarter of the work), is stopped,
    machine b takes the ledger and runs; a is woken during b's run (once b made progress of its own) or after
    it, and must end with exit 1 naming its lease; then quiet.check(mark) asserts nothing was done since
    quiet.mark() (woken after b ended, anything done since is a's)."""
    env_a = remote_env(cli_env(emu, **SLOW), tmp_path / "machine-a")
    first = start(args, env_a, tmp_path / "out-a", "a")
    try:
        poll(lambda: progress() >= 2, 120, "a quarter of the first run's work")
        first.stop()
        second = take_over(
            args,
            remote_env(cli_env(emu), tmp_path / "machine-b"),
            url,
            tmp_path / "machine-b",
            tmp_path / "out-b",
            120,
        )
        if when == "during":
            made = progress()
            poll(lambda: progress() > made or second.proc.poll() is not None, 120, "b's own work")
            first.wake()
            lost_its_lease(*first.finish(120))
            done, output = second.finish(300)
            assert done == 0, output[-3000:]
        else:
            done, output = second.finish(300)
            assert done == 0, output[-3000:]
            quiet.mark()
            first.wake()
            lost_its_lease(*first.finish(120))
            quiet.check("the run woken after its lease")
    finally:
        first.kill()


def third_run_does_nothing(args: list[str], emu: Workspace, tmp_path: Path, quiet: Quiet) -> None:
    quiet.mark()
    third = run_cli(args, remote_env(cli_env(emu), tmp_path / "machine-c"), timeout=300)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    quiet.check("the third run")


class Quiet:
    """What a run may not do once its lease may have ended: nothing the emulator would log as a change."""

    def __init__(self, control: EmulatorControl, ws: Workspace) -> None:
        self.control, self.ws, self.since = control, ws, 0.0

    def mark(self) -> None:
        """From now on."""
        self.since = time.time()

    def check(self, who: str) -> None:
        """Nothing was done since mark() (by `who`, the run since then)."""
        assert changes_since(self.control, self.ws, self.since) == [], who


@pytest.mark.parametrize("when", WHEN_IN_MAKE_TEST)
def test_migrate_holder_woken_after_its_lease_sends_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_bucket: str,
    s3_server: str,
    when: str,
) -> None:
    rows = clip_rows(clip_factory, 8, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    url = f"s3://{s3_bucket}/ledgers/library.db"
    args = migrate_args(emu, inventory, Path("unused"), transfers=4, wait_timeout=120)
    args[args.index("--ledger") + 1] = url

    quiet = Quiet(emu_control, emu)
    pause_take_over_wake(
        args, emu, url, tmp_path, when=when, progress=lambda: len(emu_control.videos(emu)), quiet=quiet
    )
    videos = wait_done(emu_control, emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # one video per row
    assert all(v["status"] == "done" for v in videos)
    finished, _ = replica(url, s3_server, lambda book: book.counts().get("finished", 0))
    assert finished == len(rows)
    third_run_does_nothing(args, emu, tmp_path, quiet)


@pytest.mark.long
@pytest.mark.parametrize("when", WHEN)
def test_apply_holder_woken_after_its_lease_sends_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_bucket: str,
    s3_server: str,
    when: str,
) -> None:
    url = f"s3://{s3_bucket}/ledgers/library.db"
    keys = migrated(tmp_path, emu, emu_control, clip_factory, url, s3_server, 4)
    ordered = sorted(keys)
    targets = [ordered[i % len(ordered)] for i in range(8)]
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "copy", "id": f"cp{i}", "target": f"key:{key}", "parent_id": emu.project_id}
            for i, key in enumerate(targets)
        ],
    )
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--transfers", "4", "--wait-timeout", "120"]
    library = len(emu_control.videos(emu))
    quiet = Quiet(emu_control, emu)
    pause_take_over_wake(
        args,
        emu,
        url,
        tmp_path,
        when=when,
        progress=lambda: len(emu_control.videos(emu)) - library,
        quiet=quiet,
    )
    videos = wait_done(emu_control, emu)
    # one copy per operation: each title as often as the library has it plus the copies made of it
    assert sorted(v["title"] for v in videos) == sorted([*keys.values(), *(keys[k] for k in targets)])
    states, _ = replica(url, s3_server, lambda book: {u.unit_key: u.state for u in book.units()})
    assert len(states) == len(targets) and set(states.values()) == {"done"}
    third_run_does_nothing(args, emu, tmp_path, quiet)


@pytest.mark.long
@pytest.mark.parametrize("when", WHEN)
def test_backup_holder_woken_after_its_lease_writes_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, s3_bucket: str, when: str
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=8)
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    url = f"s3://{s3_bucket}/ledgers/backup.db"
    args = ["backup", "--project", emu.project_id, "--to", f"s3://{s3_bucket}/b/", "--ledger", url]
    args += ["--transfers", "2", "--no-prefect"]
    s3 = boto3.session.Session().client("s3", region_name="us-east-1")

    def written() -> dict[str, object]:
        """Each destination object and when it was last written."""
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=s3_bucket, Prefix="b/")
        return {o["Key"]: o["LastModified"] for page in pages for o in page.get("Contents", [])}

    def copies() -> int:
        return sum(1 for key in written() if key.endswith(".mp4"))

    class Untouched(Quiet):
        """No copy started (a download of a file) and nothing written or deleted in the destination."""

        def mark(self) -> None:
            super().mark()
            self.seen = written()

        def check(self, who: str) -> None:
            assert media_gets(emu_control, emu, since=self.since) == {}, who
            assert written() == self.seen, who

    quiet = Untouched(emu_control, emu)
    # Each download answers late: copies are in flight when the first run is stopped.
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "path": "^/media/"}])
    pause_take_over_wake(args, emu, url, tmp_path, when=when, progress=copies, quiet=quiet)
    emu_control.clear_faults(emu)
    stored = written()
    for video_id, video in truth.items():  # every video's file, whole
        key = f"b/videos/{video_id}/{video_id}.mp4"
        assert key in stored
        body = s3.get_object(Bucket=s3_bucket, Key=key)["Body"].read()
        assert hashlib.md5(body).hexdigest() == video["md5"]
    third_run_does_nothing(args, emu, tmp_path, quiet)

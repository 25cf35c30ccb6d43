"""A holder that wakes after its lease: a run on a remote ledger whose whole process group is stopped
(SIGSTOP: a frozen container, a suspended machine) past its lease, the same command run from another folder
meanwhile, and the first woken (SIGCONT) while the second runs or after it ended.

The woken run must send nothing that changes the service (its lease's deadline is checked right before each
such request), end with exit status 1 naming its lease, and leave one video per row; a third run that
restores the replica has nothing left to send. Its calls wait in the rate limiter (a slow rate), so at the
stop some are admitted-to-be: without the check after admission they would leave on waking.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.connectors.waiting import poll
from tests.flows.apply_fixtures import wait_done
from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.pause_helpers import Started, changes_since, start, take_over
from tests.flows.remote_helpers import TEST_LEASE, remote_env, replica

#: The stopped run's rate: its calls queue in the limiter, so some wait there when it is stopped.
SLOW = {"VIDEOFERRY_RATE_PER_SECOND": "1"}
LOST = ("could not renew its lease", "lost its lock")


def lost_its_lease(code: int, output: str) -> None:
    assert code == 1, output[-3000:]
    assert any(words in output for words in LOST), output[-3000:]


def wake_and_rerun(
    first: Started,
    args: list[str],
    env: dict[str, str],
    url: str,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    when: str,
) -> None:
    """Take the ledger from machine b while a is stopped, wake a during or after b's run, and check that a
    sent nothing once woken after b ended; b must end done."""
    second_dir = tmp_path / "machine-b"
    if when == "during":
        second = take_over(args, env, url, second_dir, tmp_path / "out-b", 120)
        made = len(emu_control.videos(emu))
        # b has listed what a's copy may miss, and creates: a's calls would now make a second video
        poll(
            lambda: len(emu_control.videos(emu)) > made or second.proc.poll() is not None, 120, "b's creates"
        )
        first.wake()
        code, output = first.finish(120)
        lost_its_lease(code, output)
        done, second_output = second.finish(300)
        assert done == 0, second_output[-3000:]
        return
    second = take_over(args, env, url, second_dir, tmp_path / "out-b", 120)
    done, second_output = second.finish(300)
    assert done == 0, second_output[-3000:]
    mark = time.time()
    first.wake()
    code, output = first.finish(120)
    lost_its_lease(code, output)
    assert changes_since(emu_control, emu, mark) == []  # woken after b ended: nothing sent


@pytest.mark.parametrize("when", ["during", "after"])
def test_migrate_holder_woken_after_its_lease_sends_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    s3_bucket: str,
    s3_server: str,
    when: str,
) -> None:
    rows = clip_rows(clip_factory, 12, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    url = f"s3://{s3_bucket}/ledgers/library.db"
    args = migrate_args(emu, inventory, Path("unused"), transfers=4, wait_timeout=120)
    args[args.index("--ledger") + 1] = url
    first = start(args, remote_env(cli_env(emu, **SLOW), tmp_path / "machine-a"), tmp_path / "out-a", "a")
    try:
        poll(lambda: len(emu_control.videos(emu)) >= len(rows) // 4, 120, "a quarter of the creates")
        first.stop()
        stopped = len(emu_control.videos(emu))
        assert stopped < len(rows), "the first run made every video before it was stopped"
        wake_and_rerun(
            first,
            args,
            remote_env(cli_env(emu), tmp_path / "machine-b"),
            url,
            tmp_path,
            emu,
            emu_control,
            when,
        )
    finally:
        first.kill()

    videos = wait_done(emu_control, emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # one video per row
    assert all(v["status"] == "done" for v in videos)
    finished, _ = replica(url, s3_server, lambda book: book.counts().get("finished", 0))
    assert finished == len(rows)

    mark = time.time()
    third = run_cli(args, remote_env(cli_env(emu), tmp_path / "machine-c"), timeout=300)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert changes_since(emu_control, emu, mark) == []  # the replica knows everything: nothing sent
    assert float(TEST_LEASE) >= 5

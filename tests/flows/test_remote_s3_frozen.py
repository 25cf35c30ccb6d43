"""An S3 outage longer than the lease mid-run: the S3 server's process frozen (SIGSTOP) at a quarter of
the work for the lease + 4 s, then thawed. Requests the holder had in flight land only after the thaw, when
another run may hold the ledger: they must land where nobody restores from.

The holder stops (exit status 1, its lease named); a second machine waits the lease out and finishes with
nothing made twice; a third run restores a ledger that opens (SQLite's integrity check) and sends nothing.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from emulator.control import EmulatorControl, Workspace
from tests.connectors.waiting import poll
from tests.flows.apply_fixtures import wait_done
from tests.flows.frozen_s3 import FrozenS3
from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, write_inventory
from tests.flows.pause_helpers import changes_since, start
from tests.flows.remote_helpers import TEST_LEASE, remote_env, replica, rerun_until_free

#: How long S3 stays frozen beyond the lease (the issue's: the lease + 4 s).
BEYOND_LEASE = 4.0
LOST = ("could not renew its lease", "lost its lock")


def test_migrate_through_an_s3_outage_past_the_lease(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, frozen_s3: FrozenS3
) -> None:
    rows = clip_rows(clip_factory, 16, metadata=False)
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    url = f"s3://{frozen_s3.bucket}/ledgers/library.db"
    args = migrate_args(emu, inventory, Path("unused"), transfers=3, wait_timeout=120)
    args[args.index("--ledger") + 1] = url

    def env(machine: str) -> dict[str, str]:
        return remote_env(cli_env(emu, AWS_ENDPOINT_URL=frozen_s3.endpoint), tmp_path / machine)

    first = start(args, env("machine-a"), tmp_path / "out-a", "a")
    with ThreadPoolExecutor(1) as machine_b:
        try:
            poll(lambda: len(emu_control.videos(emu)) >= len(rows) // 4, 120, "a quarter of the creates")
            frozen_s3.freeze()
            frozen_at = time.monotonic()
            try:
                code, output = first.finish(120)  # it stops by itself: its lease cannot be renewed
                # machine b starts while S3 is still frozen: its requests meet a's late ones at the thaw
                second_run = machine_b.submit(
                    rerun_until_free, lambda: run_cli(args, env("machine-b"), timeout=300), 90
                )
                # the outage lasts lease + 4 s whatever the holder did meanwhile (the scenario, not a state)
                time.sleep(max(0.0, frozen_at + float(TEST_LEASE) + BEYOND_LEASE - time.monotonic()))
            finally:
                frozen_s3.thaw()
        finally:
            first.kill()
        assert code == 1, output[-6000:]
        assert any(words in output for words in LOST), output[-3000:]
        second, _refused = second_run.result(400)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    videos = wait_done(emu_control, emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # nothing made twice

    mark = time.time()
    third = run_cli(args, env("machine-c"), timeout=300)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert changes_since(emu_control, emu, mark) == []
    finished, why = replica(url, frozen_s3.endpoint, lambda book: book.counts().get("finished", 0))
    assert finished == len(rows) and "could not be used" not in why

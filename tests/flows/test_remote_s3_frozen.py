"""An S3 outage longer than the lease mid-run: the S3 server's process frozen (SIGSTOP) at a quarter of
the work for the lease + 4 s, then thawed. Requests the holder had in flight land only after the thaw, when
another run may hold the ledger: they must land where nobody restores from.

The holder stops (exit status 1, its lease named); a second machine, started during the outage, waits the
lease out and finishes with nothing done twice; a third run restores a ledger that opens (SQLite's integrity
check) and has nothing left to do. For migrate, apply, backup, archive and setup.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.connectors.waiting import poll
from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.backup_fixtures import make_library, media_gets
from tests.flows.frozen_s3 import FrozenS3
from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, settings_for, write_inventory
from tests.flows.pause_helpers import changes_since, start
from tests.flows.remote_helpers import TEST_LEASE, remote_env, replica, rerun_until_free
from tests.flows.test_archive import broadcast_world, stored
from tests.flows.test_setup import SECRET_ENV, conference, write
from videoferry.connectors.client import VideoClient
from videoferry.emulator.control import EmulatorControl, Workspace

#: How long S3 stays frozen beyond the lease (the issue's: the lease + 4 s).
BEYOND_LEASE = 4.0
LOST = ("could not renew its lease", "lost its lock")


def through_an_outage(
    args: list[str],
    env: Callable[[str], dict[str, str]],
    frozen_s3: FrozenS3,
    tmp_path: Path,
    started: Callable[[], bool],
) -> None:
    """Machine a runs args until started() (a quarter of its work), S3 freezes for the lease + 4 s; a must
    stop by itself (exit 1 naming its lease); machine b, started during the outage, must end done."""
    first = start(args, env("machine-a"), tmp_path / "out-a", "a")
    with ThreadPoolExecutor(1) as machine_b:
        try:
            poll(started, 120, "a quarter of the first run's work")
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


def third_run(args: list[str], env: dict[str, str]) -> None:
    third = run_cli(args, env, timeout=300)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]


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

    quarter = len(rows) // 4
    through_an_outage(args, env, frozen_s3, tmp_path, lambda: len(emu_control.videos(emu)) >= quarter)
    videos = wait_done(emu_control, emu)
    assert sorted(v["title"] for v in videos) == sorted(r["title"] for r in rows)  # nothing made twice

    mark = time.time()
    third_run(args, env("machine-c"))
    assert changes_since(emu_control, emu, mark) == []
    finished, why = replica(url, frozen_s3.endpoint, lambda book: book.counts().get("finished", 0))
    assert finished == len(rows) and "could not be used" not in why


@pytest.mark.long
def test_apply_through_an_s3_outage_past_the_lease(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, frozen_s3: FrozenS3
) -> None:
    url = f"s3://{frozen_s3.bucket}/ledgers/library.db"

    def env(machine: str) -> dict[str, str]:
        return remote_env(cli_env(emu, AWS_ENDPOINT_URL=frozen_s3.endpoint), tmp_path / machine)

    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 4, metadata=False))
    migrate = migrate_args(emu, inventory, Path("unused"), transfers=2, wait_timeout=120)
    migrate[migrate.index("--ledger") + 1] = url
    third_run(migrate, env("migrating"))
    keys, _ = replica(url, frozen_s3.endpoint, lambda book: {i.key: i.spec.title for i in book.items()})
    library = len(wait_done(emu_control, emu))
    targets = [sorted(keys)[i % len(keys)] for i in range(12)]
    ops = write_ops(
        tmp_path / "ops.csv",
        [
            {"op": "copy", "id": f"cp{i}", "target": f"key:{key}", "parent_id": emu.project_id}
            for i, key in enumerate(targets)
        ],
    )
    args = ["apply", str(ops), "--no-prefect", "--ledger", url, "--transfers", "2", "--wait-timeout", "120"]
    made = lambda: len(emu_control.videos(emu)) - library  # noqa: E731
    through_an_outage(args, env, frozen_s3, tmp_path, lambda: made() >= len(targets) // 4)
    videos = wait_done(emu_control, emu)
    # one copy per operation, none twice
    assert sorted(v["title"] for v in videos) == sorted([*keys.values(), *(keys[k] for k in targets)])

    mark = time.time()
    third_run(args, env("machine-c"))
    assert changes_since(emu_control, emu, mark) == []
    states, why = replica(url, frozen_s3.endpoint, lambda book: {u.unit_key: u.state for u in book.units()})
    assert len(states) == len(targets) and set(states.values()) == {"done"} and "could not be used" not in why


@pytest.mark.long
def test_backup_through_an_s3_outage_past_the_lease(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, frozen_s3: FrozenS3
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=8)
    truth = {v["id"]: v for v in emu_control.videos(emu)}
    url = f"s3://{frozen_s3.bucket}/ledgers/backup.db"
    # The copies go to a folder: the outage is the ledger's (a destination in the frozen S3 would hold the
    # holder's copies for as long as boto3's retries last, README "Remote ledger").
    dest = tmp_path / "backup"
    args = ["backup", "--project", emu.project_id, "--to", str(dest), "--ledger", url]
    args += ["--transfers", "2", "--no-prefect"]

    def env(machine: str) -> dict[str, str]:
        return remote_env(cli_env(emu, AWS_ENDPOINT_URL=frozen_s3.endpoint), tmp_path / machine)

    def files() -> list[Path]:
        return list(dest.glob("videos/*/*.mp4"))

    # Each download answers late: copies are in flight when S3 freezes.
    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "path": "^/media/"}])
    through_an_outage(args, env, frozen_s3, tmp_path, lambda: len(files()) >= len(truth) // 4)
    emu_control.clear_faults(emu)
    for video_id, video in truth.items():  # every video's file, whole
        body = (dest / "videos" / video_id / f"{video_id}.mp4").read_bytes()
        assert hashlib.md5(body).hexdigest() == video["md5"]

    mark = time.time()
    third_run(args, env("machine-c"))
    assert media_gets(emu_control, emu, since=mark) == {}  # nothing copied again
    done, why = replica(url, frozen_s3.endpoint, lambda book: len(book.ops(status="done")))
    assert done >= len(truth) and "could not be used" not in why


@pytest.mark.long
def test_archive_through_an_s3_outage_past_the_lease(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, frozen_s3: FrozenS3
) -> None:
    world = broadcast_world(emu_control, emu, {"Nightly": 4, "Special": 4}, chat=2)
    url = f"s3://{frozen_s3.bucket}/ledgers/archive.db"
    dest = tmp_path / "night"  # the ledger's outage only (as for backup)
    args = ["archive", "--to", str(dest), "--project", emu.project_id, "--ledger", url]
    args += ["--transfers", "1", "--no-prefect"]

    def env(machine: str) -> dict[str, str]:
        return remote_env(cli_env(emu, AWS_ENDPOINT_URL=frozen_s3.endpoint), tmp_path / machine)

    def files() -> list[Path]:
        return list(dest.glob("*/*/*.mp4"))

    emu_control.set_faults(emu, [{"kind": "latency", "ms": 700, "path": "^/media/"}])
    through_an_outage(args, env, frozen_s3, tmp_path, lambda: len(files()) >= len(world.videos) // 4)
    emu_control.clear_faults(emu)
    truth = stored(emu_control, emu)
    for event_id, pairs in world.streams.items():  # every recording, whole
        for stream_id, video_id in pairs:
            body = (dest / event_id / stream_id / f"{video_id}.mp4").read_bytes()
            assert hashlib.md5(body).hexdigest() == truth[video_id]["md5"]

    mark = time.time()
    third_run(args, env("machine-c"))
    assert media_gets(emu_control, emu, since=mark) == {}  # nothing copied again
    _, why = replica(url, frozen_s3.endpoint, lambda book: None)
    assert "could not be used" not in why


@pytest.mark.long
def test_setup_through_an_s3_outage_past_the_lease(
    tmp_path: Path, emu_control: EmulatorControl, frozen_s3: FrozenS3
) -> None:
    ws = emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)
    rooms = 12
    file = write(tmp_path / "conference.yaml", conference(ws, rooms=rooms))
    url = f"s3://{frozen_s3.bucket}/ledgers/setup.db"
    args = ["setup", "up", file, "--ledger", url, "--outputs", str(tmp_path / "outputs")]

    def env(machine: str) -> dict[str, str]:
        extra = {**SECRET_ENV, "AWS_ENDPOINT_URL": frozen_s3.endpoint, "VIDEOFERRY_RATE_PER_SECOND": "4"}
        return remote_env(cli_env(ws, **extra), tmp_path / machine)

    with VideoClient.from_settings(settings_for(ws, rate_per_second=500, rate_per_minute=30000)) as client:

        def events() -> list[str]:
            return sorted(e.name or "" for e in client.live_events.iter_events(parent_id=ws.project_id))

        through_an_outage(args, env, frozen_s3, tmp_path, lambda: len(events()) >= rooms // 4)
        assert events() == sorted(f"Room {n:02d}" for n in range(rooms))  # each room once

    mark = time.time()
    third_run(args, env("machine-c"))
    assert changes_since(emu_control, ws, mark) == []
    _, why = replica(url, frozen_s3.endpoint, lambda book: None)
    assert "could not be used" not in why

"""The remote ledger against moto's S3 server and the real Litestream: restore, replicate, settle, lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import psutil
import pytest

from tests.connectors.waiting import poll
from tests.flows.frozen_s3 import FrozenS3
from videoferry.connectors.ledger_errors import (
    RemoteLedgerBusyError,
    RemoteLedgerError,
    RemoteLedgerLostError,
)
from videoferry.connectors.ledger_lease import FREE, HELD, Holder, LockRecord
from videoferry.connectors.ledger_remote import LEDGER_FILE, RemoteLedger, is_remote_ledger, open_readonly
from videoferry.connectors.litestream import CA_BUNDLE_VAR, CERT_FILE_VAR, find_binary, litestream_env
from videoferry.connectors.s3 import S3Config
from videoferry.state import Ledger

REPO = Path(__file__).resolve().parents[2]
# Tests that never wait for a lease to run out hold the default 60 s one: a short lease on a loaded machine
# (a renewal thread not scheduled for seconds) would be lost by design. Those that wait use the shortest
# that still leaves lease/2 of slack to a late renewal.
CHILD_LEASE = 5.0
RENEWED_LEASE = 9.0


def prepare(path: Path) -> None:
    Ledger.open(path).close()


def write_runs(path: Path, count: int) -> None:
    """Commit `count` runs (two transactions each) through the real Ledger."""
    with Ledger.open(path) as ledger:
        for _ in range(count):
            ledger.finish_run(ledger.start_run("migrate"), "succeeded")


def count_runs(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture()
def s3cfg(s3_server: str) -> S3Config:
    return S3Config(endpoint_url=s3_server)


@pytest.fixture()
def url(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/ledgers/prod.db"


@pytest.fixture()
def s3(s3_server: str):
    return boto3.session.Session().client("s3", endpoint_url=s3_server, region_name="us-east-1")


def lock_record(s3, url: str) -> LockRecord:
    bucket, key = url[len("s3://") :].split("/", 1)
    data = s3.get_object(Bucket=bucket, Key=key + ".lock")["Body"].read()
    return LockRecord.from_bytes(data, url)


def open_home(url: str, workdir: Path, s3cfg: S3Config, **kwargs) -> RemoteLedger:
    return RemoteLedger.open(url, workdir, s3cfg, prepare=prepare, **kwargs)


def test_a_new_remote_ledger_is_created_replicated_and_settled(tmp_path: Path, url, s3cfg, s3) -> None:
    assert is_remote_ledger(url) and not is_remote_ledger(str(tmp_path / "ledger.db"))
    with open_home(url, tmp_path / "w1", s3cfg, holder=Holder.current(run="r1")) as home:
        assert home.path.name == LEDGER_FILE and home.path.parent.parent == (tmp_path / "w1").resolve()
        assert home.path.parent.stat().st_mode & 0o777 == 0o700
        assert not home.restored and not home.may_be_behind
        assert lock_record(s3, url).state == HELD
        write_runs(home.path, 5)
    assert home.lost == "" and not home.litestream.running
    bucket, key = url[len("s3://") :].split("/", 1)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=key)["Contents"]]
    assert key + ".lock" in keys and any(k.startswith(key + "/") and k.endswith(".ltx") for k in keys)
    record = lock_record(s3, url)
    assert record.state == FREE and record.holder.run == "r1" and record.behind == ""
    assert record.txid is not None and record.txid >= 1
    assert home.stats.open_seconds > 0 and home.stats.settle_seconds > 0
    # the lock's own requests: one GET and one PUT to take it, a PUT per renewal, one PUT to free it
    assert home.stats.lock_requests["GetObject"] == 1
    assert home.stats.lock_requests["PutObject"] == 2 + home._keeper.renewals  # type: ignore[union-attr]

    with open_readonly(url, s3cfg) as copy:
        assert copy.exists and copy.txid == record.txid and not copy.may_be_behind
        assert count_runs(copy.path) == 5
        folder = copy.path.parent
    assert not folder.exists()


def test_runs_in_other_folders_continue_the_same_ledger(tmp_path: Path, url, s3cfg, s3) -> None:
    mine = tmp_path / "a" / LEDGER_FILE  # a local ledger of the user's in the same folder is left alone
    write_runs(mine, 1)
    with open_home(url, tmp_path / "a", s3cfg) as home:
        assert count_runs(home.path) == 0
        write_runs(home.path, 3)
    assert count_runs(mine) == 1
    shutil.rmtree(tmp_path / "a")  # the first machine's disk is gone
    with open_home(url, tmp_path / "b", s3cfg) as second:
        assert second.restored and not second.may_be_behind
        assert second.restored_txid == lock_record(s3, url).txid
        assert count_runs(second.path) == 3
        write_runs(second.path, 4)
    with open_home(url, tmp_path / "c", s3cfg) as third:
        assert count_runs(third.path) == 7 and not third.may_be_behind
        with sqlite3.connect(third.path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_second_holder_is_refused_naming_the_first(tmp_path: Path, url, s3cfg) -> None:
    first_holder = Holder(host="node-a", pid=111, started="2026-03-04T05:06:07Z", run="nightly")
    with open_home(url, tmp_path / "a", s3cfg, holder=first_holder) as home:
        with pytest.raises(RemoteLedgerBusyError) as caught:
            open_home(url, tmp_path / "b", s3cfg)
        assert (
            f"ledger {url} is in use by another run (host node-a, pid 111, started 2026-03-04T05:06:07Z, "
            "run nightly)" in str(caught.value)
        )
        assert not (tmp_path / "b").exists()  # refused before touching its folder
        home.check()
    with open_home(url, tmp_path / "b", s3cfg) as later:
        assert not later.may_be_behind


def test_the_lease_is_renewed_while_a_run_outlasts_it(tmp_path: Path, url, s3cfg, s3) -> None:
    with open_home(url, tmp_path / "a", s3cfg, lease_seconds=RENEWED_LEASE) as home:
        keeper = home._keeper
        assert keeper is not None
        poll(lambda: keeper.renewals >= 4, 60, "four renewals (beyond one lease) of a 9 s lease")
        assert lock_record(s3, url).renewal >= 4
        with pytest.raises(RemoteLedgerBusyError, match="is in use by another run"):
            open_home(url, tmp_path / "b", s3cfg)
        write_runs(home.path, 2)
        home.check()
    assert lock_record(s3, url).state == FREE


def test_read_only_restore_takes_no_lock(tmp_path: Path, url, s3cfg, s3) -> None:
    with open_readonly(url, s3cfg) as empty:
        assert not empty.exists and not empty.path.exists() and not empty.may_be_behind
    with open_home(url, tmp_path / "a", s3cfg, holder=Holder.current(run="holder")) as home:
        write_runs(home.path, 2)
        home.sync()
        before = lock_record(s3, url)
        with open_readonly(url, s3cfg) as copy:
            assert copy.exists and count_runs(copy.path) == 2
            assert copy.may_be_behind and "a run holds it now" in copy.behind_reason
            assert "run holder" in copy.behind_reason
        assert lock_record(s3, url).token == before.token  # the holder's lock untouched
        home.check()
    with open_readonly(url, s3cfg) as settled:
        assert count_runs(settled.path) == 2 and not settled.may_be_behind


def _start_child(url: str, workdir: Path, endpoint: str, synced: int, extra: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.connectors.remote_ledger_child", url, str(workdir), endpoint]
        + [str(CHILD_LEASE), str(synced), str(extra)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )


def _read_json_line(proc: subprocess.Popen[str]) -> dict:
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the child prints within its own bounded open/sync (pytest-timeout)
    assert line, f"the child exited ({proc.poll()}) before printing"
    return json.loads(line)


def test_kill_9_of_a_holder_then_a_restore_elsewhere(tmp_path: Path, url, s3cfg, s3_server: str, s3) -> None:
    child = _start_child(url, tmp_path / "killed", s3_server, synced=6, extra=4)
    try:
        synced = _read_json_line(child)
        written = _read_json_line(child)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    # Litestream, watching the job through -exec, syncs once more and exits: no replicator is left behind.
    poll(lambda: not psutil.pid_exists(synced["litestream_pid"]), 30, "the orphaned litestream to exit")
    assert not Path(synced["control"]).exists()  # its watcher removed the config, log and socket
    shutil.rmtree(tmp_path / "killed")

    with open_readonly(url, s3cfg) as copy:  # the dead holder's lease still runs: "a run holds it now"
        assert copy.may_be_behind and f"pid {synced['pid']}" in copy.behind_reason
        assert synced["synced"] <= count_runs(copy.path) <= written["written"]

    def take() -> RemoteLedger | None:
        try:
            return open_home(url, tmp_path / "heir", s3cfg)
        except RemoteLedgerBusyError as exc:
            assert f"pid {synced['pid']}" in str(exc) and "run child-run" in str(exc)
            return None

    heir = poll(take, 30, "the dead holder's lease to expire")
    assert isinstance(heir, RemoteLedger)
    with heir:
        assert heir.may_be_behind
        assert f"its last holder (host {os.uname().nodename}, pid {synced['pid']}" in heir.behind_reason
        assert "did not settle" in heir.behind_reason
        assert synced["synced"] <= count_runs(heir.path) <= written["written"]
    # Settling cleanly does not clear it: the heir's job did not say it looked every unsettled item up.
    assert lock_record(s3, url).behind == heir.behind_reason
    with open_home(url, tmp_path / "next", s3cfg) as following:
        assert following.behind_reason == heir.behind_reason
        following.mark_reconciled()
    with open_home(url, tmp_path / "after", s3cfg) as caught_up:
        assert not caught_up.may_be_behind


def test_a_lost_lock_stops_replication_and_is_not_released(tmp_path: Path, url, s3cfg, s3) -> None:
    home = open_home(url, tmp_path / "a", s3cfg, lease_seconds=RENEWED_LEASE)  # first renewal after 3 s
    bucket, key = url[len("s3://") :].split("/", 1)
    record = lock_record(s3, url)
    intruder = LockRecord(
        state=HELD, holder=Holder(host="intruder", pid=9, started="x"), token="t", renewal=0, lease_seconds=60
    )
    s3.put_object(Bucket=bucket, Key=key + ".lock", Body=intruder.to_bytes(url))
    poll(lambda: home.lost, 15, "the holder to notice its lock was taken")
    assert "held by host intruder" in home.lost
    poll(lambda: not home.litestream.running, 15, "replication to stop")
    with pytest.raises(RemoteLedgerLostError, match="held by host intruder"):
        home.check()
    with pytest.raises(RemoteLedgerLostError):
        home.settle()
    assert lock_record(s3, url).holder.host == "intruder"  # not overwritten by a release
    assert record.token != lock_record(s3, url).token


def test_a_lease_lost_in_an_s3_outage_stops_litestream_commands_waiting_on_s3(
    tmp_path: Path, frozen_s3: FrozenS3
) -> None:
    """A holder settling when S3 stops answering: the final sync's check (`litestream ltx`, which reads S3)
    is killed as soon as the lease is lost, not left to its own timeout, and no other command starts."""
    url = f"s3://{frozen_s3.bucket}/ledgers/outage.db"
    s3cfg = S3Config(endpoint_url=frozen_s3.endpoint)
    home = open_home(url, tmp_path / "w", s3cfg, lease_seconds=RENEWED_LEASE)
    write_runs(home.path, 2)
    home.sync()
    engine = home.litestream
    frozen_s3.freeze()
    try:
        with ThreadPoolExecutor(1) as pool:
            checking = pool.submit(engine.replica_txid, 3600.0)  # no bound of its own: only the abort ends it
            poll(lambda: home.lost, 60, "the lease to be declared lost during the outage")
            with pytest.raises(RemoteLedgerError, match="ltx stopped: .*could not renew its lease"):
                checking.result(60)
        with pytest.raises(RemoteLedgerError, match="status not run: .*could not renew its lease"):
            engine.local_txid()
        with pytest.raises(RemoteLedgerLostError, match="could not renew its lease"):
            home.settle()
    finally:
        frozen_s3.thaw()


def test_a_vanished_working_folder_leaves_the_ledger_marked_behind(tmp_path: Path, url, s3cfg, s3) -> None:
    home = open_home(url, tmp_path / "w", s3cfg)
    write_runs(home.path, 2)
    home.sync()
    shutil.rmtree(tmp_path / "w")
    with pytest.raises(RemoteLedgerError, match="the final sync (is not|cannot be) verified"):
        home.settle()
    record = lock_record(s3, url)
    assert record.state == FREE and record.txid is None and "ended unverified" in record.behind
    with open_home(url, tmp_path / "again", s3cfg) as heir:
        assert heir.may_be_behind and count_runs(heir.path) == 2


def test_a_failing_prepare_releases_the_lock_as_found(tmp_path: Path, url, s3cfg, s3) -> None:
    with open_home(url, tmp_path / "a", s3cfg) as home:
        write_runs(home.path, 1)
    settled = lock_record(s3, url)

    def broken(path: Path) -> None:
        raise RuntimeError("schema upgrade refused")

    with pytest.raises(RuntimeError, match="schema upgrade refused"):
        RemoteLedger.open(url, tmp_path / "b", s3cfg, prepare=broken)
    record = lock_record(s3, url)
    assert record.state == FREE and record.txid == settled.txid and record.behind == ""
    with open_home(url, tmp_path / "c", s3cfg) as again:
        assert not again.may_be_behind and count_runs(again.path) == 1


def test_the_job_error_wins_and_the_ledger_still_settles(tmp_path: Path, url, s3cfg, s3) -> None:
    with pytest.raises(ValueError, match="row 3"):
        with open_home(url, tmp_path / "a", s3cfg) as home:
            write_runs(home.path, 2)
            raise ValueError("row 3: bad title")
    record = lock_record(s3, url)
    assert record.state == FREE and record.txid is not None and record.behind == ""


@pytest.mark.parametrize("bad", ["s3://bucket", "s3://bucket/", "s3:///key", "/tmp/ledger.db"])
def test_bad_urls_are_named(tmp_path: Path, bad: str, s3cfg) -> None:
    with pytest.raises(RemoteLedgerError, match="ledger"):
        RemoteLedger.open(bad, tmp_path, s3cfg, prepare=prepare)


def test_litestream_refuses_aws_ca_bundle_and_the_engine_hides_it(
    tmp_path: Path, url, s3cfg, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text(Path(_system_bundle()).read_text())
    # The trap itself: Litestream 0.5 will not start with AWS_CA_BUNDLE in its environment.
    trapped = subprocess.run(
        [find_binary(), "ltx", "-json", url],
        env={**os.environ, CA_BUNDLE_VAR: str(bundle)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert trapped.returncode != 0 and "RootCAs" in trapped.stderr
    # The engine's environment for it: no AWS_CA_BUNDLE; the bundle handed to Go as SSL_CERT_FILE.
    env = litestream_env({"PATH": "/bin", CA_BUNDLE_VAR: str(bundle)})
    assert CA_BUNDLE_VAR not in env and env[CERT_FILE_VAR] == str(bundle)
    assert litestream_env({CA_BUNDLE_VAR: "x", CERT_FILE_VAR: "y"})[CERT_FILE_VAR] == "y"
    monkeypatch.setenv(CA_BUNDLE_VAR, str(bundle))
    with open_home(url, tmp_path / "w", s3cfg) as home:
        write_runs(home.path, 1)
    with open_readonly(url, s3cfg) as copy:
        assert count_runs(copy.path) == 1


def _system_bundle() -> str:
    import certifi

    return certifi.where()


@pytest.fixture(autouse=True)
def _no_litestream_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """No test leaves a litestream process of its own running."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    poll(
        lambda: (
            not [
                p
                for p in psutil.Process().children(recursive=True)
                if p.pid not in before
                and p.is_running()
                and p.status() != psutil.STATUS_ZOMBIE
                and "litestream" in p.name()
            ]
        ),
        30,
        "this test's litestream processes to exit",
    )

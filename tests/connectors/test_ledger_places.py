"""A remote ledger's replica places against moto's S3 server and the real Litestream: a stale holder's late
writes never reach the place the current holder replicates into, and a restore that finds the newest place
unusable falls back to the newest usable one and says so."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import boto3
import pytest

from tests.connectors.test_ledger_remote import (
    _no_litestream_left,  # noqa: F401 - an autouse fixture: no test leaves a litestream running
    count_runs,
    lock_record,
    open_home,
    write_runs,
)
from tests.connectors.waiting import poll
from videoferry.connectors.ledger_errors import RemoteLedgerBusyError, RemoteLedgerLostError
from videoferry.connectors.ledger_places import GENERATIONS, Places
from videoferry.connectors.ledger_remote import RemoteLedger, open_readonly
from videoferry.connectors.s3 import S3Config

REPO = Path(__file__).resolve().parents[2]
CHILD_LEASE = 5.0


@pytest.fixture()
def s3cfg(s3_server: str) -> S3Config:
    return S3Config(endpoint_url=s3_server)


@pytest.fixture()
def url(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/ledgers/prod.db"


@pytest.fixture()
def s3(s3_server: str):
    return boto3.session.Session().client("s3", endpoint_url=s3_server, region_name="us-east-1")


def objects_under(s3, url: str, prefix: str) -> list[str]:
    bucket = url[len("s3://") :].split("/", 1)[0]
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]


def integrity(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def test_a_stale_holders_late_writes_never_reach_the_current_place(
    tmp_path: Path, url: str, s3cfg: S3Config, s3, s3_server: str
) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.connectors.remote_ledger_child",
            url,
            str(tmp_path / "stale"),
            s3_server,
        ]
        + [str(CHILD_LEASE), "6", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert json.loads(child.stdout.readline())["synced"] == 6
        child.stdout.readline()
        # The holder stops (its Litestream, in a session of its own, goes on): its lease runs out.
        child.send_signal(signal.SIGSTOP)

        def take() -> RemoteLedger | None:
            try:
                return open_home(url, tmp_path / "heir", s3cfg)
            except RemoteLedgerBusyError:
                return None

        heir = poll(take, 60, "the stopped holder's lease to run out")
        assert isinstance(heir, RemoteLedger)
        with heir:
            assert heir.generation and lock_record(s3, url).generation == heir.generation
            assert count_runs(heir.path) == 6
            # The stale holder's ledger takes more writes, which its Litestream (still running) replicates
            # where it always did: late writes, made after the heir restored.
            stale = next((tmp_path / "stale").glob("remote-ledger-*/ledger.db"))
            generations = f"ledgers/prod.db/{GENERATIONS}/"

            def stale_place() -> set[str]:  # the place the stale holder replicates into: the ledger's own
                return {
                    k for k in objects_under(s3, url, "ledgers/prod.db/") if not k.startswith(generations)
                }

            before = stale_place()
            write_runs(stale, 4)
            poll(
                lambda: stale_place() - before,
                30,
                "the stale holder's Litestream to write its late transactions into its own place",
            )
            write_runs(heir.path, 3)
            heir.sync()
            write_runs(heir.path, 2)
    finally:
        child.send_signal(signal.SIGCONT)
        child.kill()
        child.wait()
    with open_home(url, tmp_path / "third", s3cfg) as third:
        assert count_runs(third.path) == 6 + 3 + 2  # the heir's writes, none of the stale holder's
        assert integrity(third.path) == "ok" and "could not be used" not in third.behind_reason
        assert third.generation == heir.generation  # a clean release hands its place on


def test_an_unusable_newest_place_falls_back_to_the_newest_usable_and_says_so(
    tmp_path: Path, url: str, s3cfg: S3Config, s3
) -> None:
    first = open_home(url, tmp_path / "a", s3cfg)
    write_runs(first.path, 2)
    first.sync()
    first.litestream.kill()  # its final sync cannot be verified: released "behind", unverified
    with pytest.raises(RemoteLedgerLostError, match="replication stopped"):
        first.settle()
    with open_home(url, tmp_path / "b", s3cfg) as second:
        assert second.generation  # a new place: the last holding did not end cleanly
        assert count_runs(second.path) == 2
        write_runs(second.path, 3)
    newest = f"ledgers/prod.db/{GENERATIONS}/{second.generation}/"
    bucket = url[len("s3://") :].split("/", 1)[0]
    for key in objects_under(s3, url, newest):  # the newest place spoiled: every file of it garbage
        s3.put_object(Bucket=bucket, Key=key, Body=b"\0" * 4096)

    with open_readonly(url, s3cfg) as copy:
        assert copy.exists and count_runs(copy.path) == 2
        assert "could not be used" in copy.behind_reason and second.generation in copy.behind_reason
    with open_home(url, tmp_path / "c", s3cfg) as third:
        assert count_runs(third.path) == 2 and integrity(third.path) == "ok"  # never an unopenable ledger
        assert third.may_be_behind and "could not be used" in third.behind_reason
        assert third.behind_since is None  # since when is unknown: every unsettled item is looked up
        assert third.generation not in ("", second.generation)  # never into the spoiled place
        write_runs(third.path, 1)  # it opens, and takes this run's writes
        assert count_runs(third.path) == 3
    assert Places(s3, bucket, "ledgers/prod.db", url).generations()[0] == third.generation


def test_without_a_lock_record_the_newest_place_is_restored(
    tmp_path: Path, url: str, s3cfg: S3Config, s3
) -> None:
    first = open_home(url, tmp_path / "a", s3cfg)
    write_runs(first.path, 2)
    first.sync()
    first.litestream.kill()  # released unverified: the next run moves to a place of its own
    with pytest.raises(RemoteLedgerLostError):
        first.settle()
    with open_home(url, tmp_path / "b", s3cfg) as second:
        assert second.generation
        write_runs(second.path, 3)
    bucket, key = url[len("s3://") :].split("/", 1)
    s3.delete_object(Bucket=bucket, Key=key + ".lock")  # the lock object lost (deleted by hand)
    with open_readonly(url, s3cfg) as copy:
        assert count_runs(copy.path) == 5 and "no lock record" in copy.behind_reason
    with open_home(url, tmp_path / "c", s3cfg) as third:
        assert count_runs(third.path) == 5 and third.may_be_behind
        assert third.generation not in ("", second.generation)  # an unknown writer may be behind it


def test_a_clean_settle_after_a_move_keeps_two_older_places(
    tmp_path: Path, url: str, s3cfg: S3Config, s3
) -> None:
    for n in range(4):  # each ends unverified: the next one moves to a place of its own
        home = open_home(url, tmp_path / f"w{n}", s3cfg)
        write_runs(home.path, 1)
        home.sync()
        home.litestream.kill()
        with pytest.raises(RemoteLedgerLostError):
            home.settle()
    bucket = url[len("s3://") :].split("/", 1)[0]
    places = Places(s3, bucket, "ledgers/prod.db", url)
    before = places.generations()
    assert len(before) == 4  # '' and three generations
    with open_home(url, tmp_path / "last", s3cfg) as last:
        write_runs(last.path, 1)
    assert places.generations() == [last.generation, *before[:2]]  # the oldest two deleted
    with open_home(url, tmp_path / "check", s3cfg) as check:
        assert count_runs(check.path) == 5 and check.generation == last.generation

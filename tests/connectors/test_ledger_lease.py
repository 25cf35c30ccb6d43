"""The remote ledger's lock against moto's S3 server: conditional writes, busy, expiry, renewal, loss."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest

from tests.connectors.waiting import poll
from videoferry.connectors.ledger_errors import (
    RemoteLedgerBusyError,
    RemoteLedgerError,
    RemoteLedgerLostError,
)
from videoferry.connectors.ledger_keeper import LeaseKeeper
from videoferry.connectors.ledger_lease import FREE, HELD, Holder, LeaseLock, LockView, lease_clock
from videoferry.connectors.s3 import S3Config, make_s3_client

URL = "s3://{bucket}/ledgers/prod.db"


@pytest.fixture()
def new_lock(s3_server: str, s3_bucket: str) -> Callable[..., LeaseLock]:
    def make(lease: float = 30.0) -> LeaseLock:
        client = make_s3_client(S3Config(endpoint_url=s3_server))
        url = URL.format(bucket=s3_bucket)
        return LeaseLock(client, s3_bucket, "ledgers/prod.db.lock", url, lease)

    return make


def no_reason(view: object) -> str:
    return ""


def seen(lock: LeaseLock) -> LockView:
    """The lock object as it is now (it must exist)."""
    view = lock.read()
    assert view is not None
    return view


def test_conditional_writes_let_one_holder_in_and_name_it_to_the_next(new_lock) -> None:
    first, second = new_lock(), new_lock()
    holder = Holder(host="worker-7", pid=4242, started="2026-01-02T03:04:05Z", run="run-1")
    assert first.acquire(holder, no_reason) is None  # there was no lock object: created with If-None-Match
    with pytest.raises(RemoteLedgerBusyError) as caught:
        second.acquire(Holder.current(), no_reason)
    text = str(caught.value)
    assert "in use by another run (host worker-7, pid 4242, started 2026-01-02T03:04:05Z, run run-1)" in text
    assert "wait for it to finish or use another ledger" in text
    assert second.mine is None

    first.release(txid=7, behind="")
    previous = second.acquire(Holder.current(), no_reason)
    assert previous is not None and previous.record.state == FREE and previous.record.txid == 7
    view = second.read()
    assert view is not None and view.record.state == HELD and view.record.txid == 7
    with pytest.raises(RemoteLedgerError, match="not held by this process"):
        first.renew()


def test_every_write_changes_the_etag_and_renewal_keeps_the_lock(new_lock) -> None:
    lock = new_lock()
    lock.acquire(Holder.current(), no_reason)
    etags = {seen(lock).etag}
    for _ in range(3):
        lock.renew()
        view = lock.read()
        assert view is not None and view.record.state == HELD
        etags.add(view.etag)
    assert len(etags) == 4
    assert seen(lock).record.renewal == 3


def test_an_expired_lease_is_taken_over_and_its_holder_learns_it_lost(new_lock) -> None:
    dead, heir = new_lock(lease=1), new_lock(lease=1)
    dead.acquire(Holder(host="gone", pid=1, started="2026-01-01T00:00:00Z"), no_reason)
    reasons: list[str] = []

    def note(view: LockView | None) -> str:
        assert view is not None
        reasons.append(view.record.state)
        return "heir"

    def take() -> bool:
        try:
            heir.acquire(Holder.current(), note)
        except RemoteLedgerBusyError:
            return False
        return True

    poll(take, 10, "the dead holder's 1 s lease to expire")
    assert reasons == [HELD]  # the heir saw a held, expired lease
    assert seen(heir).record.behind == "heir"
    with pytest.raises(RemoteLedgerLostError, match=r"lost its lock .* it is now held by host "):
        dead.renew()
    with pytest.raises(RemoteLedgerError):
        dead.release(txid=1, behind="")  # it holds nothing any more
    assert seen(heir).record.holder.pid != 1


def test_a_put_whose_answer_is_lost_and_retried_still_counts_as_ours(new_lock) -> None:
    lock = new_lock()
    retried: list[int] = []

    def retry_once(attempts: int, **_: object) -> float | None:
        # The first PUT reached S3; pretend its answer was lost so botocore sends it once more (-> 412).
        if not retried:
            retried.append(attempts)
            return 0.0
        return None

    lock.client.meta.events.register_first("needs-retry.s3.PutObject", retry_once)
    lock.acquire(Holder.current(), no_reason)
    assert retried == [1]
    assert lock.mine is not None and seen(lock).record.token == lock.mine.token
    retried.clear()
    lock.renew()
    assert retried == [1]
    assert seen(lock).record.renewal == 1


def test_a_foreign_lock_object_is_refused_by_name(new_lock, s3_bucket: str) -> None:
    lock = new_lock()
    lock.client.put_object(Bucket=s3_bucket, Key=lock.key, Body=json.dumps({"owner": "someone"}).encode())
    with pytest.raises(RemoteLedgerError, match=rf"lock object s3://{s3_bucket}/ledgers/prod.db.lock is not"):
        lock.acquire(Holder.current(), no_reason)


def test_the_keeper_declares_a_taken_lock_lost_at_its_next_renewal(new_lock, s3_bucket: str) -> None:
    lock = new_lock(lease=9)  # renewals every 3 s, and 4.5 s of slack for a late one on a loaded machine
    lock.acquire(Holder.current(), no_reason)
    lost: list[str] = []
    keeper = LeaseKeeper(lock, lost.append, acquired_at=lease_clock())
    # Another party overwrites the lock unconditionally: the keeper's first renewal's If-Match fails.
    lock.client.put_object(Bucket=s3_bucket, Key=lock.key, Body=_rewritten(lock, "intruder"))
    keeper.start()
    try:
        poll(lambda: bool(lost), 30, "the keeper to notice the lock was taken")
        assert "held by host intruder" in lost[0]
        assert keeper.lost == lost[0] and keeper.renewals == 0
        assert seen(new_lock()).record.holder.host == "intruder"
    finally:
        keeper.stop()


def test_the_watchdog_ends_the_lease_when_s3_cannot_be_reached(new_lock) -> None:
    lock = new_lock(lease=1.5)
    lock.acquire(Holder.current(), no_reason)
    started = lease_clock()
    lost = threading.Event()
    reasons: list[str] = []

    def on_lost(why: str) -> None:
        reasons.append(why)
        lost.set()

    keeper = LeaseKeeper(lock, on_lost, acquired_at=started)
    # From now on every renewal goes to a closed loopback port (connection refused, retried by botocore).
    lock.client = make_s3_client(S3Config(endpoint_url="http://127.0.0.1:9"))
    keeper.start()
    try:
        assert lost.wait(15), "the watchdog never declared the lease lost"
        # Declared lost lease - lease/6 after the last renewal sent: before anyone else may take it.
        assert "could not renew its lease for 1.25 s" in reasons[0]
    finally:
        keeper.stop()


def _rewritten(lock: LeaseLock, host: str) -> bytes:
    view = lock.read()
    assert view is not None
    body = json.loads(view.record.to_bytes(lock.ledger_url))
    body["holder"]["host"] = host
    body["token"] = "intruder-token"
    return json.dumps(body).encode()

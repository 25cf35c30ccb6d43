"""The holding of a remote ledger's lock over time: its lease renewed in a thread, its deadline kept on the
lease clock, and the lease declared lost (once) when it was not renewed in time or another run took it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from videoferry.connectors.ledger_errors import RemoteLedgerError, RemoteLedgerLostError
from videoferry.connectors.ledger_lease import LeaseLock, lease_clock

log = logging.getLogger(__name__)

_RENEW_THREAD = "ledger-lease-renew"


class LeaseKeeper:
    """Renews a held lease every lease/3 in a thread; declares it lost (calling on_lost once) when it cannot.

    The holding ends at its deadline: lease - lease/6 after the last renewal that succeeded was *sent*
    (lease_clock), whatever the renewing call is still doing: that is before any other run can see the lease
    expired (it needs lease + 1 s after that write on S3's clock). A watchdog thread declares it lost then,
    and check() does too when called later than that (a thread that slept through the deadline - a stopped
    process, a suspended machine - wakes before the watchdog may): the caller checks right before each call
    that must not be made once another run may hold the ledger.
    """

    def __init__(self, lock: LeaseLock, on_lost: Callable[[str], None], *, acquired_at: float) -> None:
        self.lock = lock
        self.on_lost = on_lost
        self.lease = lock.lease_seconds
        self.interval = self.lease / 3
        self.margin = self.lease / 6
        self._deadline = acquired_at + self.lease - self.margin  #: on lease_clock()
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._lost = ""
        self.renewals = 0
        self._threads = [
            threading.Thread(target=self._renew_loop, name=_RENEW_THREAD, daemon=True),
            threading.Thread(target=self._watchdog, name="ledger-lease-watchdog", daemon=True),
        ]

    @property
    def lost(self) -> str:
        """Why the lease was lost ('' while held)."""
        return self._lost

    @property
    def deadline(self) -> float:
        """When the holding ends unless renewed before (lease_clock() seconds)."""
        with self._guard:
            return self._deadline

    def seconds_left(self) -> float:
        """Seconds until the holding ends unless renewed before (0 once lost or past its deadline)."""
        return 0.0 if self._lost else max(0.0, self.deadline - lease_clock())

    def check(self) -> None:
        """Raise RemoteLedgerLostError when the lease was lost or its deadline has passed (then declaring it
        lost, as the watchdog would): call it immediately before anything another holder must never see."""
        if not self._lost and lease_clock() >= self.deadline:
            self._lose(self._expired())
        if self._lost:
            raise RemoteLedgerLostError(self._lost)

    def _expired(self) -> str:
        return (
            f"ledger {self.lock.ledger_url}: this run could not renew its lease for "
            f"{self.lease - self.margin:g} s; replication was stopped so that another run may take it"
        )

    def start(self) -> None:
        """Start renewing."""
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop renewing (before the release) and wait for the threads; once the lease is lost, not for a
        renewal still waiting on S3 (an outage would hold the run's end for as long as S3's retries last):
        its write can only extend a lease nobody renews, or fail on a lock another run took."""
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive() and not (self._lost and thread.name == _RENEW_THREAD):
                thread.join()

    def _lose(self, why: str) -> None:
        with self._guard:
            if self._lost:
                return
            self._lost = why
        self._stop.set()
        log.error("%s", why)
        self.on_lost(why)

    def _renew_loop(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            sent = lease_clock()
            try:
                self.lock.renew()
            except RemoteLedgerLostError as exc:
                self._lose(str(exc))
                return
            except RemoteLedgerError as exc:
                log.warning("ledger %s: lease renewal failed, retrying: %s", self.lock.ledger_url, exc)
                wait = min(self.interval, 1.0)
                continue
            with self._guard:
                self._deadline = max(self._deadline, sent + self.lease - self.margin)
            self.renewals += 1
            wait = self.interval

    def _watchdog(self) -> None:
        while True:
            remaining = self.deadline - lease_clock()
            if remaining <= 0:
                self._lose(self._expired())
                return
            if self._stop.wait(remaining):
                return

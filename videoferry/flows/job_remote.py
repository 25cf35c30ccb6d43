"""A run's hold on a remote ledger (`--ledger s3://...`): taken and restored, every call guarded by its lease,
the replication gap looked up and closed (flows/job.run_job holds it around the run)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from videoferry.connectors.ledger_remote import RemoteLedger
    from videoferry.flows.job import Run
    from videoferry.state.ledger import Ledger
    from videoferry.tasks.gap import Gap
    from videoferry.tasks.gap_mark import GapMark

log = logging.getLogger("videoferry.flows.job")  # the run skeleton's logger: these lines are the run's

__all__ = ["close_gap", "hold_on", "hold_remote"]


def hold_remote(url: str, name: str) -> RemoteLedger:
    """Take, restore and start replicating the remote ledger for a run of the job `name`."""
    from videoferry.connectors.ledger_lease import Holder
    from videoferry.connectors.ledger_remote import RemoteLedger, default_workdir, lease_from_env
    from videoferry.connectors.s3 import S3Config
    from videoferry.state.ledger import Ledger

    def prepare(path: Path) -> None:  # the schema created or upgraded before Litestream sees the file
        Ledger.open(path).close()

    return RemoteLedger.open(
        url,
        default_workdir(),
        S3Config.from_env(),
        holder=Holder.current(run=name),
        prepare=prepare,
        lease_seconds=lease_from_env(),
    )


def hold_on(run: Run, home: RemoteLedger, mark: GapMark, taken: datetime | None) -> None:
    """Stopped when the ledger is lost; no intent before the gap mark is past (tasks/gap_mark.py) nor once
    the lock is lost; run.gap (bounded by the mark the ledger kept) when the restored copy may be behind."""
    from videoferry.connectors.ledger_errors import RemoteLedgerLostError
    from videoferry.tasks import lookup
    from videoferry.tasks.apply.gap import gap_subjects as units
    from videoferry.tasks.archive.recording import gap_subjects as copies
    from videoferry.tasks.gap import Gap
    from videoferry.tasks.migrate.gap import gap_subjects as items

    home.on_lost = lambda why: run.stop(RemoteLedgerLostError(why))
    # Nothing that changes the service leaves once the lease may have ended (checked per request).
    run.guard = run.client.transport.send_guard = home.check
    run.client.transport.send_window = home.seconds_left  # Dask workers stop sending when it ends
    run.durable = lambda: None if home.sync() is None else None

    def guard() -> None:  # mark.hold() waits a few seconds at most, for the first create only
        mark.hold()
        home.check()

    run.ledger.guard_intents(guard)
    if home.may_be_behind:
        # Every job's subjects, whichever job runs: the lost run may have been any job on this ledger.
        # The lost run sent nothing after its lease's deadline, before this run took the lock: its listing
        # waits the settle time from here, so a lagging list shows what it made last.
        listable = time.monotonic() + lookup.SETTLE_SECONDS
        subjects = (items, units, copies)
        run.gap = Gap(home.behind_reason, home.behind_since, taken, subjects=subjects, listable_at=listable)
        log.warning(
            "ledger %s: the restored copy may be behind (%s); whatever it does not show settled is looked"
            " up before anything is created for it",
            home.url,
            home.behind_reason,
        )


def close_gap(home: RemoteLedger, gap: Gap, book: Ledger, mark: GapMark) -> None:
    """Mark the remote ledger reconciled when this run looked up everything its copy did not show settled."""
    from videoferry.tasks.gap_mark import keep_mark

    left = gap.unsettled(book)
    if gap.complete(book):
        keep_mark(book, mark)  # everything before this run is in the ledger now
        home.mark_reconciled()
        log.info("ledger %s: every unsettled entry was looked up; the gap is closed", home.url)
    else:
        shown = ", ".join(left[:5]) + (" ..." if len(left) > 5 else "")
        log.warning(
            "ledger %s: %d entr%s not looked up in this run (%s): the next run looks them up again",
            home.url,
            len(left),
            "y" if len(left) == 1 else "ies",
            shown or "the listing failed",
        )

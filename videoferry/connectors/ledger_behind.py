"""Why a restored copy of a remote ledger may miss writes its last holders committed, and since when."""

from __future__ import annotations

from datetime import datetime

from videoferry.connectors.ledger_lease import HELD, LockView, parse_utc, utc_text


def behind_reason(previous: LockView | None, *, restored_txid: int | None, now_held: bool) -> str:
    """Why a restored copy may miss writes its last holder committed ('' when it cannot).

    previous: the lock as found; restored_txid: the TXID restored (None: no replica); now_held: the lock was
    taken for this run (a live holder of a read-only copy is then impossible).
    """
    if previous is None:
        return "" if restored_txid is None else "the replica has no lock record (written by an unknown run)"
    record, who = previous.record, previous.record.holder.describe()
    if record.state == HELD:
        if previous.live and not now_held:
            return f"a run holds it now ({who}): its writes after its last sync are not in this copy"
        return f"its last holder ({who}) did not settle: its lease expired"
    if record.behind:
        return record.behind
    if record.txid is None:
        return f"its last holder ({who}) released it without a verified final sync"
    if restored_txid is None or restored_txid < record.txid:
        got = "no replica" if restored_txid is None else f"TXID {restored_txid}"
        return f"restored {got}, older than TXID {record.txid} verified by its last holder ({who})"
    return ""


def behind_since(previous: LockView | None, reason: str) -> datetime | None:
    """Since when (S3's clock) writes missing from a copy that may be behind for `reason` can have been made:
    the start of the holder whose writes may be missing, or of an earlier one still unreconciled (the lock
    keeps it); None when nothing is behind or the moment is unknown (no lock record, a replica that lost
    files)."""
    if not reason or previous is None:
        return None
    record = previous.record
    kept = parse_utc(record.behind_since) if record.behind else None
    if record.behind and kept is None:
        return None  # behind since a moment no record kept
    own = record.state == HELD or (not record.behind and record.txid is None)
    started = previous.on_s3_clock(record.holder.started) if own else None
    if own and started is None:
        return None
    moments = [m for m in (kept, started) if m is not None]
    return min(moments) if moments else None


def guessed_reason(view: LockView | None) -> str:
    """The reason a run taking the lock records before it restores (its restore tells the final one)."""
    return behind_reason(view, restored_txid=None if view is None else view.record.txid, now_held=True)


def since_text(moment: datetime | None) -> str:
    """A moment as the lock keeps it (UTC text; '' for None)."""
    return "" if moment is None else utc_text(moment)

"""Batch transitions: one step of the item state machine for many items in one transaction, same rules."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from videoferry.state import items as steps
from videoferry.state import outcomes
from videoferry.state.db import LedgerDB, fetch
from videoferry.state.errors import LedgerError, UnknownItem
from videoferry.state.journal import write_transitions

_CHUNK = 900  # bound parameters per IN (...) list


@dataclass(frozen=True)
class CreateIntent:
    """One item's create intent (Ledger.begin_create's arguments)."""

    key: str
    create_title: str
    create_description: str | None = None
    source_version: str | None = None


@dataclass(frozen=True)
class UploadSession:
    """One item's answered init (Ledger.create_started_upload's arguments)."""

    key: str
    video_id: str | None
    endpoint: str
    bytes_total: int
    request_id: str | None = None


def item_rows(conn: sqlite3.Connection, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The stored rows of these items, in the keys' order (UnknownItem for a missing key, ValueError for a
    key given twice: each item takes one step per batch)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"item {key!r} appears twice in one batch")
        seen.add(key)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        sql = f"SELECT * FROM items WHERE key IN ({', '.join('?' * len(chunk))})"
        found.update((row["key"], row) for row in fetch(conn, sql, chunk))
    missing = next((k for k in keys if k not in found), None)
    if missing is not None:
        raise UnknownItem(missing)
    return [found[k] for k in keys]


def check_videos_free(conn: sqlite3.Connection, owners: Sequence[tuple[str, str]]) -> None:
    """Refuse (key, video_id) pairs whose video belongs to another item, in the ledger or in the batch."""
    claimed: dict[str, str] = {}
    for key, video_id in owners:
        if claimed.setdefault(video_id, key) != key:
            raise LedgerError(f"video {video_id} already belongs to item {claimed[video_id]!r}, not {key!r}")
    ids = list(claimed)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        sql = f"SELECT video_id, key FROM items WHERE video_id IN ({', '.join('?' * len(chunk))})"
        for row in fetch(conn, sql, chunk):
            if row["key"] != claimed[row["video_id"]]:
                owner, key = row["key"], claimed[row["video_id"]]
                raise LedgerError(f"video {row['video_id']} already belongs to item {owner!r}, not {key!r}")


def begin_creates(
    conn: sqlite3.Connection, now: str, run_id: str | None, intents: Sequence[CreateIntent]
) -> None:
    """planned -> creating for every intent (items.create_intent each)."""
    rows = item_rows(conn, [i.key for i in intents])
    moves = [
        steps.create_intent(row, now, run_id, i.create_title, i.create_description, i.source_version)
        for row, i in zip(rows, intents, strict=True)
    ]
    write_transitions(conn, now, moves)


def started_uploads(
    conn: sqlite3.Connection, now: str, run_id: str | None, sessions: Sequence[UploadSession]
) -> None:
    """creating -> uploading for every session (items.upload_started each), every video checked free first."""
    rows = item_rows(conn, [s.key for s in sessions])
    check_videos_free(conn, [(s.key, s.video_id) for s in sessions if s.video_id is not None])
    moves = [
        steps.upload_started(row, run_id, s.video_id, s.endpoint, s.bytes_total, s.request_id)
        for row, s in zip(rows, sessions, strict=True)
    ]
    write_transitions(conn, now, moves)


def uploads_complete(conn: sqlite3.Connection, now: str, run_id: str | None, keys: Sequence[str]) -> None:
    """uploading -> uploaded for every key (items.upload_end each)."""
    write_transitions(conn, now, [steps.upload_end(row, run_id, None) for row in item_rows(conn, keys)])


def finish_all(conn: sqlite3.Connection, now: str, run_id: str | None, keys: Sequence[str]) -> None:
    """done -> finished for every key (outcomes.finish each)."""
    write_transitions(conn, now, [outcomes.finish(row, run_id) for row in item_rows(conn, keys)])


class LedgerBatches:
    """The Ledger's batch steps: each is one transaction (all or nothing) moving many items by one step, each
    item checked and journalled exactly as the single step does (state.journal.write_transitions)."""

    _db: LedgerDB

    def begin_creates(self, run_id: str | None, intents: Iterable[CreateIntent]) -> None:
        """begin_create for many items (planned -> creating), before their create calls."""
        self._db.guard_intent()
        with self._db.write() as conn:
            begin_creates(conn, self._db.now(), run_id, list(intents))

    def create_started_uploads(self, run_id: str | None, sessions: Iterable[UploadSession]) -> None:
        """create_started_upload for many items (creating -> uploading)."""
        with self._db.write() as conn:
            started_uploads(conn, self._db.now(), run_id, list(sessions))

    def uploads_complete(self, run_id: str | None, keys: Iterable[str]) -> None:
        """upload_complete for many items (uploading -> uploaded; endpoints forgotten)."""
        with self._db.write() as conn:
            uploads_complete(conn, self._db.now(), run_id, list(keys))

    def finish_all(self, run_id: str | None, keys: Iterable[str]) -> None:
        """finished for many items (done -> finished)."""
        with self._db.write() as conn:
            finish_all(conn, self._db.now(), run_id, list(keys))


__all__ = ["CreateIntent", "LedgerBatches", "UploadSession"]

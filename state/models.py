"""Typed, immutable views of ledger rows (items, events, operations, runs) and the plan result."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.item import Chapter, ItemSpec
from state.columns import spec_from_row

__all__ = ["Chapter", "Event", "Item", "Op", "PlanResult", "Run", "format_time", "parse_time"]


def parse_time(value: str | None) -> datetime | None:
    """A stored RFC 3339 UTC timestamp as an aware datetime (None stays None)."""
    return datetime.fromisoformat(value) if value else None


def format_time(moment: datetime) -> str:
    """A datetime as the ledger stores it: RFC 3339 UTC with microseconds and a trailing Z (sorts as text)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json(value: str | None) -> Any:
    return json.loads(value) if value else None


@dataclass(frozen=True)
class Item:
    """One inventory item (its spec) and where it stands; upload_endpoint is a secret, kept out of repr."""

    spec: ItemSpec
    create_title: str | None
    create_description: str | None
    state: str
    failed_from: str | None
    video_id: str | None
    upload_endpoint: str | None = field(repr=False)
    upload_offset: int
    bytes_total: int | None
    status: str | None
    error_code: str | None
    error_message: str | None
    request_id: str | None
    attempts: int
    created_intent_at: datetime | None
    first_seen_run: str | None
    last_run: str | None
    updated_at: datetime | None
    done_at: datetime | None
    finished_at: datetime | None
    meta_pending: bool
    #: size plus mtime (files) or ETag (S3) of the source when its create was sent; None for URLs.
    source_version: str | None = None

    @property
    def key(self) -> str:
        """The item's key (its spec's)."""
        return self.spec.key

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Item:
        """Build from an items row (a mapping of column -> stored value)."""
        return cls(
            spec=spec_from_row(row),
            create_title=row["create_title"],
            create_description=row["create_description"],
            state=row["state"],
            failed_from=row["failed_from"],
            video_id=row["video_id"],
            upload_endpoint=row["upload_endpoint"],
            upload_offset=row["upload_offset"] or 0,
            bytes_total=row["bytes_total"],
            status=row["status"],
            error_code=row["error_code"],
            error_message=row["error_message"],
            request_id=row["request_id"],
            attempts=row["attempts"] or 0,
            created_intent_at=parse_time(row["created_intent_at"]),
            first_seen_run=row["first_seen_run"],
            last_run=row["last_run"],
            updated_at=parse_time(row["updated_at"]),
            done_at=parse_time(row["done_at"]),
            finished_at=parse_time(row["finished_at"]),
            meta_pending=bool(row["meta_pending"]),
            source_version=row["source_version"],
        )


@dataclass(frozen=True)
class Event:
    """One journal row: a transition (or a note / retry / run event) with its time, run and request id."""

    event_id: int
    time: datetime
    run_id: str | None
    kind: str
    key: str | None
    op_id: int | None
    from_state: str | None
    to_state: str | None
    error_code: str | None
    request_id: str | None
    message: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Event:
        """Build from an events row."""
        time = parse_time(row["time"])
        assert time is not None
        return cls(
            event_id=row["event_id"],
            time=time,
            run_id=row["run_id"],
            kind=row["kind"],
            key=row["key"],
            op_id=row["op_id"],
            from_state=row["from_state"],
            to_state=row["to_state"],
            error_code=row["error_code"],
            request_id=row["request_id"],
            message=row["message"],
        )


@dataclass(frozen=True)
class Op:
    """One operation call: its target, parameters and intent, the snapshot taken before it, its outcome and
    the object it created (copy, concat, archive). video_id is target_id when the target is a video."""

    op_id: int
    op_key: str | None
    owner_key: str | None  #: whose op: an item key, backup:<dest>[:<video>], archive:<id> (column item_key)
    video_id: str | None
    kind: str
    params: Mapping[str, Any]
    before: Mapping[str, Any] | None
    status: str
    result: Any
    error_code: str | None
    error_message: str | None
    request_id: str | None
    run_id: str | None
    intent_at: datetime
    outcome_at: datetime | None
    target_kind: str | None = None
    target_id: str | None = None
    created_kind: str | None = None
    created_id: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Op:
        """Build from an ops row."""
        intent_at = parse_time(row["intent_at"])
        assert intent_at is not None
        return cls(
            op_id=row["op_id"],
            op_key=row["op_key"],
            owner_key=row["item_key"],
            video_id=row["video_id"],
            kind=row["kind"],
            params=_json(row["params"]) or {},
            before=_json(row["before"]),
            status=row["status"],
            result=_json(row["result"]),
            error_code=row["error_code"],
            error_message=row["error_message"],
            request_id=row["request_id"],
            run_id=row["run_id"],
            intent_at=intent_at,
            outcome_at=parse_time(row["outcome_at"]),
            target_kind=row["target_kind"],
            target_id=row["target_id"],
            created_kind=row["created_kind"],
            created_id=row["created_id"],
        )


@dataclass(frozen=True)
class Run:
    """One run of a command against the ledger (params never hold secrets)."""

    run_id: str
    command: str
    params: Mapping[str, Any]
    status: str
    pid: int | None
    host: str | None
    started_at: datetime
    finished_at: datetime | None
    summary: Mapping[str, Any] | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Run:
        """Build from a runs row."""
        started_at = parse_time(row["started_at"])
        assert started_at is not None
        return cls(
            run_id=row["run_id"],
            command=row["command"],
            params=_json(row["params"]) or {},
            status=row["status"],
            pid=row["pid"],
            host=row["host"],
            started_at=started_at,
            finished_at=parse_time(row["finished_at"]),
            summary=_json(row["summary"]),
        )


@dataclass(frozen=True)
class PlanResult:
    """What plan() did: counts by outcome, plus the keys it refused to change or saw twice."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    already_done: int = 0
    conflicts: tuple[
        str, ...
    ] = ()  # identity (source / parent / via) changed while a video may exist: not applied
    duplicates: tuple[str, ...] = ()  # keys seen again in the same inventory: later rows ignored

    @property
    def total(self) -> int:
        """Rows considered (duplicates excluded)."""
        return self.added + self.updated + self.unchanged + self.already_done + len(self.conflicts)

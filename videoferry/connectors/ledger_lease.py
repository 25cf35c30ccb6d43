"""The lock of a remote ledger: one JSON object beside the replica, its lease renewed by conditional PUTs.

Taken with PutObject If-None-Match '*' (no lock object yet) or If-Match <etag> (a free or expired one),
renewed and released with If-Match <etag of our last write>: two runs can never both believe they hold it.
Whether a lease has expired is judged on S3's clock only (the object's Last-Modified against the Date of the
answer that read it), so clocks of different machines never matter.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.ledger_errors import (
    RemoteLedgerBusyError,
    RemoteLedgerError,
    RemoteLedgerLostError,
)
from videoferry.connectors.s3 import client_error_code

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
RECORD_KIND = "videoferry ledger lock"
HELD, FREE = "held", "free"
#: S3 states Last-Modified and Date to the second: one more second makes "expired" certain.
CLOCK_RESOLUTION = timedelta(seconds=1)
#: The clock a holder measures its lease on: Linux's CLOCK_BOOTTIME (it goes on counting while the machine
#: is suspended, which CLOCK_MONOTONIC does not), else the monotonic clock.
_LEASE_CLOCK = getattr(time, "CLOCK_BOOTTIME", None)
_CONFLICT_CODES = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def lease_clock() -> float:
    """Seconds on the clock a lease's deadline is kept on (never set back; counts a suspended machine's
    sleep where the system says so)."""
    return time.clock_gettime(_LEASE_CLOCK) if _LEASE_CLOCK is not None else time.monotonic()


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(text: str) -> datetime | None:
    """A time written by utc_text (or any ISO 8601 UTC text) as an aware datetime; None when unreadable."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Holder:
    """Who holds a ledger: host, pid, when its run started, and the run's id when it has one."""

    host: str
    pid: int
    started: str
    run: str = ""

    @classmethod
    def current(cls, run: str = "") -> Holder:
        """This process, started now."""
        return cls(host=socket.gethostname(), pid=os.getpid(), started=utc_text(datetime.now(UTC)), run=run)

    def describe(self) -> str:
        """'host h, pid 12, started 2026-...Z[, run r]' for messages."""
        text = f"host {self.host}, pid {self.pid}, started {self.started}"
        return f"{text}, run {self.run}" if self.run else text


@dataclass(frozen=True)
class LockRecord:
    """The lock object's content: state, holder, this holding's token and renewal count, lease, replica facts.

    txid is the replica's last TXID verified by a clean settle (None when never settled). behind is why the
    replica may miss committed writes ('' when it does not): set when a holder died or could not verify its
    last sync, and kept by later holders until one of them says its run looked every unsettled item up.
    behind_since: the earliest moment (S3's clock, UTC text) a write missing from the replica can have been
    made ('' when unknown, or nothing is behind). generation: the replica's place (connectors.ledger_places:
    '' is the ledger's key itself), where the holder replicates and the next one restores from. written_at:
    the writer's own clock when it wrote the record (read back only, to translate its times to S3's clock).
    """

    state: str
    holder: Holder
    token: str
    renewal: int
    lease_seconds: float
    txid: int | None = None
    behind: str = ""
    behind_since: str = ""
    generation: str = ""
    written_at: str = field(default="", compare=False)

    def to_bytes(self, ledger: str) -> bytes:
        """The JSON written to S3 (token and renewal make each write's content, so its ETag, unique)."""
        body = {
            **asdict(self),
            "kind": RECORD_KIND,
            "ledger": ledger,
            "written_at": utc_text(datetime.now(UTC)),
        }
        return json.dumps(body, sort_keys=True).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> LockRecord:
        """Parse a lock object; RemoteLedgerError naming it when it is not one of ours."""
        try:
            body = json.loads(data)
            if body.get("kind") != RECORD_KIND or body.get("state") not in (HELD, FREE):
                raise ValueError("not a videoferry ledger lock")
            holder = Holder(**{k: body["holder"][k] for k in ("host", "pid", "started", "run")})
            return cls(
                state=body["state"],
                holder=holder,
                token=str(body["token"]),
                renewal=int(body["renewal"]),
                lease_seconds=float(body["lease_seconds"]),
                txid=None if body.get("txid") is None else int(body["txid"]),
                behind=str(body.get("behind", "")),
                behind_since=str(body.get("behind_since") or ""),
                generation=str(body.get("generation") or ""),
                written_at=str(body.get("written_at") or ""),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RemoteLedgerError(f"lock object {where} is not a videoferry ledger lock ({exc})") from None


@dataclass(frozen=True)
class LockView:
    """The lock object as one GET saw it, with S3's own clock at that moment."""

    record: LockRecord
    etag: str
    last_modified: datetime
    server_now: datetime
    read_at: datetime = field(default_factory=lambda: datetime.now(UTC))  #: this machine's clock then

    def on_s3_clock(self, holder_time: str) -> datetime | None:
        """A time its writer wrote by its own clock (the holder's start), on S3's clock: shifted by how far
        the writer's clock was from S3's when it wrote this record (written_at against Last-Modified, both to
        the second). None when unreadable."""
        moment, written = parse_utc(holder_time), parse_utc(self.record.written_at)
        if moment is None:
            return None
        return moment if written is None else moment + (self.last_modified - written)

    def on_local_clock(self, s3_time: datetime) -> datetime:
        """A time on S3's clock on this machine's clock (S3's Date against the moment this read answered)."""
        return s3_time - (self.server_now - self.read_at)

    @property
    def expires_at(self) -> datetime:
        """When a held lease ends unless renewed (S3's clock): last write + lease + the clock's resolution."""
        return self.last_modified + timedelta(seconds=self.record.lease_seconds) + CLOCK_RESOLUTION

    @property
    def live(self) -> bool:
        """Held by a run whose lease has not expired."""
        return self.record.state == HELD and self.server_now <= self.expires_at


class LeaseLock:
    """The lock object '<key>.lock' of one remote ledger, and this process's holding of it."""

    def __init__(
        self, client: S3Client, bucket: str, key: str, ledger_url: str, lease_seconds: float
    ) -> None:
        if lease_seconds < 1:
            raise ValueError("the lease must be at least 1 second")
        self.client = client
        self.bucket = bucket
        self.key = key
        self.url = f"s3://{bucket}/{key}"
        self.ledger_url = ledger_url
        self.lease_seconds = lease_seconds
        self._mine: LockRecord | None = None
        self._etag = ""
        self._writing = threading.Lock()  #: one rewrite of our record at a time (renewal thread, the run)
        #: lease_clock() right before the PUT that took the lock was sent: its lease cannot start earlier.
        self.taken_at = 0.0

    @property
    def mine(self) -> LockRecord | None:
        """What this process last wrote while holding the lock (None when it does not hold it)."""
        return self._mine

    def read(self) -> LockView | None:
        """GET the lock object (None when there is none)."""
        try:
            resp = self.client.get_object(Bucket=self.bucket, Key=self.key)
        except ClientError as exc:
            if client_error_code(exc) in ("NoSuchKey", "404"):
                return None
            raise RemoteLedgerError(f"cannot read the lock {self.url}: {exc}") from None
        except BotoCoreError as exc:
            raise RemoteLedgerError(f"cannot read the lock {self.url}: {exc}") from None
        body = resp["Body"]
        try:
            data = body.read()
        finally:
            body.close()
        headers = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        last_modified = resp["LastModified"].astimezone(UTC)
        return LockView(
            record=LockRecord.from_bytes(data, self.url),
            etag=str(resp.get("ETag", "")),
            last_modified=last_modified,
            server_now=_server_time(headers),
            read_at=datetime.now(UTC),
        )

    def acquire(
        self,
        holder: Holder,
        behind: Callable[[LockView | None], str],
        since: Callable[[LockView | None], str] = lambda view: "",
    ) -> LockView | None:
        """Take the lock for holder; the view it replaced (None: there was none) or RemoteLedgerBusyError.
        The new record names the replica's place the replaced one named (the holder may move() to another).

        behind(previous view) gives the reason the replica may miss writes, since(previous view) the earliest
        moment such a write can have been made (S3's clock, UTC text); both are kept in the new record.
        """
        view = self.read()
        if view is not None and view.live:
            raise self._busy(view)
        record = LockRecord(
            state=HELD,
            holder=holder,
            token=uuid.uuid4().hex,
            renewal=0,
            lease_seconds=self.lease_seconds,
            txid=view.record.txid if view else None,
            behind=behind(view),
            behind_since=since(view),
            generation=view.record.generation if view else "",
        )
        self.taken_at = lease_clock()
        try:
            self._etag = self._put(record, if_match=view.etag if view else None)
        except _Conflict:
            current = self.read()
            if current is None or current.record.token != record.token:
                raise self._busy(current) from None
            self._etag = current.etag  # our own PUT landed and its answer was lost; the retry saw it
        self._mine = record
        return view

    def renew(self) -> None:
        """Extend the lease: rewrite the record If-Match our last ETag (RemoteLedgerLostError if taken)."""
        with self._writing:
            mine = self._require()
            self._write(replace(mine, renewal=mine.renewal + 1))

    def move(self, generation: str) -> None:
        """Name another place of the replica for this holding (before anything is replicated there);
        RemoteLedgerLostError if the lock was taken meanwhile."""
        with self._writing:
            mine = self._require()
            self._write(replace(mine, renewal=mine.renewal + 1, generation=generation))

    def release(self, *, txid: int | None, behind: str, behind_since: str = "") -> None:
        """Mark the lock free with the replica's verified TXID (None: unverified), why it may be behind and
        since when (S3's clock, UTC text; '' unknown)."""
        with self._writing:
            mine = self._require()
            record = replace(
                mine,
                state=FREE,
                renewal=mine.renewal + 1,
                txid=txid,
                behind=behind,
                behind_since=behind_since if behind else "",
            )
            self._write(record)
            self._mine = None

    def _require(self) -> LockRecord:
        if self._mine is None:
            raise RemoteLedgerError(f"the lock {self.url} is not held by this process")
        return self._mine

    def _write(self, record: LockRecord) -> None:
        try:
            self._etag = self._put(record, if_match=self._etag)
        except _Conflict:
            current = self.read()
            if current is None or (current.record.token, current.record.renewal) != (
                record.token,
                record.renewal,
            ):
                self._mine = None
                taker = f" by {current.record.holder.describe()}" if current else " by nobody"
                raise RemoteLedgerLostError(
                    f"ledger {self.ledger_url}: this run lost its lock (its lease ran out, or it was "
                    f"overwritten); it is now held{taker}"
                ) from None
            self._etag = current.etag
        self._mine = record

    def _put(self, record: LockRecord, *, if_match: str | None) -> str:
        """One conditional PUT of the record; its ETag. _Conflict when the condition failed."""
        kwargs: dict[str, Any] = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
        try:
            resp = self.client.put_object(
                Bucket=self.bucket,
                Key=self.key,
                Body=record.to_bytes(self.ledger_url),
                ContentType="application/json",
                **kwargs,
            )
        except ClientError as exc:
            if client_error_code(exc) in (*_CONFLICT_CODES, "NoSuchKey"):
                raise _Conflict() from None
            raise RemoteLedgerError(f"cannot write the lock {self.url}: {exc}") from None
        except BotoCoreError as exc:
            raise RemoteLedgerError(f"cannot write the lock {self.url}: {exc}") from None
        return str(resp.get("ETag", ""))

    def _busy(self, view: LockView | None) -> RemoteLedgerBusyError:
        if view is None or view.record.state != HELD:
            return RemoteLedgerBusyError(
                f"ledger {self.ledger_url}: another run took the lock while this one was taking it; try again"
            )
        return RemoteLedgerBusyError(
            f"ledger {self.ledger_url} is in use by another run ({view.record.holder.describe()}); its lease "
            f"runs to {utc_text(view.expires_at)} (S3's clock) unless renewed; wait for it to finish "
            "or use another ledger"
        )


class _Conflict(Exception):
    """A conditional write's condition did not hold (412), or S3 saw a concurrent one (409)."""


def _server_time(headers: dict[str, Any]) -> datetime:
    """S3's clock from an answer's Date header (this machine's clock if it has none)."""
    try:
        return parsedate_to_datetime(str(headers["date"])).astimezone(UTC)
    except (KeyError, TypeError, ValueError):
        return datetime.now(UTC)

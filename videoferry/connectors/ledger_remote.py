"""A ledger kept in S3 (s3://bucket/key): restored into a working folder, replicated by Litestream, locked.

    with RemoteLedger.open(url, workdir, s3, holder=Holder.current(run), prepare=init) as home:
        ...                     # the job opens its Ledger at home.path, calls home.check() before creates
    # leaving the block settled it: every committed transaction verified in S3, Litestream stopped, lock free

The replica is Litestream's (LTX files under '<key>/'); the lock is the object '<key>.lock' beside it
(connectors.ledger_lease). See connectors/README.md, "Remote ledger".
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from videoferry.connectors.ledger_behind import behind_reason, behind_since, guessed_reason, since_text
from videoferry.connectors.ledger_errors import RemoteLedgerError, RemoteLedgerLostError
from videoferry.connectors.ledger_keeper import LeaseKeeper
from videoferry.connectors.ledger_lease import FREE, LOCK_SUFFIX, Holder, LeaseLock, LockView
from videoferry.connectors.ledger_places import Places, Restored, describe, next_generation, place_key
from videoferry.connectors.litestream import Litestream, Replica
from videoferry.connectors.s3 import S3Config, S3UriError, make_s3_client, parse_s3_uri

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.db"
#: How long a dead holder keeps the ledger: renewed every lease/3 while its run lives.
DEFAULT_LEASE_SECONDS = 60.0
#: Litestream's sync interval: a committed transaction reaches S3 within about this plus its 1 s WAL check.
DEFAULT_SYNC_INTERVAL = 1.0
_REGION_FALLBACK = "us-east-1"


#: The working folder of remote ledgers' local copies (and their runs' rate limiter store) when set.
WORKDIR_VAR = "VIDEOFERRY_WORKDIR"
#: The lease of a remote ledger's lock in seconds when set (default DEFAULT_LEASE_SECONDS, at least 5).
LEASE_VAR = "VIDEOFERRY_LEDGER_LEASE"
MIN_LEASE_SECONDS = 5.0


def is_remote_ledger(value: str | os.PathLike[str]) -> bool:
    """Whether a --ledger value names a remote ledger (s3://...) rather than a local file."""
    return str(value).startswith("s3://")


def lease_from_env(env: Mapping[str, str] | None = None) -> float:
    """The lease runs take (VIDEOFERRY_LEDGER_LEASE seconds, else 60): how long a dead holder keeps the
    ledger. RemoteLedgerError when it is not a number of at least 5 seconds."""
    env = os.environ if env is None else env
    raw = env.get(LEASE_VAR, "").strip()
    if not raw:
        return DEFAULT_LEASE_SECONDS
    try:
        lease = float(raw)
    except ValueError:
        lease = -1.0
    if not lease >= MIN_LEASE_SECONDS:
        least = f"{MIN_LEASE_SECONDS:g}"
        raise RemoteLedgerError(f"{LEASE_VAR}={raw!r}: give the lease in seconds, at least {least}")
    return lease


def default_workdir(env: Mapping[str, str] | None = None) -> Path:
    """Where runs on this machine keep remote ledgers' local copies: VIDEOFERRY_WORKDIR, else the user's cache
    folder ($XDG_CACHE_HOME/videoferry, ~/.cache/videoferry). Anything in it may vanish between runs."""
    env = os.environ if env is None else env
    given = env.get(WORKDIR_VAR, "").strip()
    if given:
        return Path(given).expanduser()
    cache = env.get("XDG_CACHE_HOME", "").strip()
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "videoferry"


@dataclass
class RemoteLedgerStats:
    """What opening and settling cost: seconds, and the S3 requests of the lock (not Litestream's)."""

    restore_seconds: float = 0.0
    open_seconds: float = 0.0
    settle_seconds: float = 0.0
    lock_requests: dict[str, int] = field(default_factory=dict)


def _locate(url: str, s3: S3Config | None) -> tuple[S3Client, Replica, RemoteLedgerStats]:
    """Parse the URL, make a private S3 client that counts its requests, and describe the replica."""
    try:
        bucket, key = parse_s3_uri(url)
    except S3UriError as exc:
        raise RemoteLedgerError(f"bad remote ledger {url!r}: {exc}") from None
    key = key.strip("/")
    if not key:
        raise RemoteLedgerError(f"remote ledger {url!r} names no key: use s3://bucket/path/to/ledger")
    cfg = s3 or S3Config.from_env()
    client = make_s3_client(cfg)
    stats = RemoteLedgerStats()

    def count(**kwargs: Any) -> None:
        name = str(kwargs["event_name"]).rsplit(".", 1)[-1]
        stats.lock_requests[name] = stats.lock_requests.get(name, 0) + 1

    client.meta.events.register("before-send.s3.*", count)
    region = cfg.region or client.meta.region_name or _REGION_FALLBACK
    return (
        client,
        Replica(bucket=bucket, path=key, endpoint=cfg.endpoint_url, region=region, block=cfg.block),
        stats,
    )


def local_path(url: str, workdir: str | Path) -> Path:
    """Where a run keeps its copy: a folder of its own per ledger in workdir (never a file of the user's)."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    return Path(workdir).expanduser().resolve() / f"remote-ledger-{digest}" / LEDGER_FILE


class RemoteLedger:
    """One run's hold on a remote ledger: the local copy (path), the lock, and Litestream replicating it.

    may_be_behind / behind_reason: the restored copy may miss transactions its last holder committed (that
    holder died, or could not verify its final sync): the job must then look up every item the copy does not
    show as settled before creating it. behind_since: the earliest moment (this machine's clock) such a
    transaction can have been made (None: unknown). restored is False for a new ledger (no replica yet).
    """

    def __init__(self, url: str, lock: LeaseLock, engine: Litestream, stats: RemoteLedgerStats) -> None:
        self.url = url
        self.path = engine.db_path
        self.lock = lock
        self.litestream = engine
        self.stats = stats
        self.restored = False
        self.restored_txid: int | None = None
        self.behind_reason = ""
        self.behind_since: datetime | None = None
        self._behind_since_s3: datetime | None = None
        self._acquired_s3: datetime | None = None  #: when this run took the lock (S3's clock, about)
        self._reconciled = False
        #: Called once (from the lease's thread) when this run loses the ledger: to stop the job's workers.
        self.on_lost: Callable[[str], None] | None = None
        self._keeper: LeaseKeeper | None = None
        self._replicating = False
        self._started = False
        self._settled = False
        self._settled_txid = 0
        #: The replica's places in S3, and the one this run replicates into (connectors.ledger_places).
        self.places = Places(lock.client, lock.bucket, engine.replica.path, url)
        self.generation = ""
        self._moved = False

    @property
    def may_be_behind(self) -> bool:
        """Whether the restored copy may miss committed writes (see behind_reason)."""
        return bool(self.behind_reason)

    @classmethod
    def open(
        cls,
        url: str,
        workdir: str | Path,
        s3: S3Config | None = None,
        *,
        holder: Holder | None = None,
        prepare: Callable[[Path], None],
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        sync_interval: float = DEFAULT_SYNC_INTERVAL,
    ) -> RemoteLedger:
        """Take the lock, restore the replica into workdir, prepare it, start replicating, sync once.

        prepare(path) must leave a valid ledger file at path (create or upgrade it; e.g. open and close the
        ledger) before replication starts. Raises RemoteLedgerBusyError naming the holder when another run
        holds the lock, RemoteLedgerError when S3 or Litestream fail (the lock is then released).
        """
        started = time.monotonic()
        client, replica, stats = _locate(url, s3)
        engine = Litestream(
            local_path(url, workdir),
            replica,
            sync_interval=sync_interval,
            shutdown_timeout=max(1.0, lease_seconds / 4),
        )
        lock = LeaseLock(client, replica.bucket, replica.path + LOCK_SUFFIX, url, lease_seconds)
        home = cls(url, lock, engine, stats)
        try:
            previous = lock.acquire(
                holder or Holder.current(),
                lambda view: guessed_reason(view),
                lambda view: since_text(behind_since(view, guessed_reason(view))),
            )
        except BaseException:
            engine.close()
            raise
        # S3's clock when the lock was taken: the Date of the read just before it (no lock yet: ours).
        home._acquired_s3 = previous.server_now if previous is not None else datetime.now(UTC)
        # The lease counts from the moment the taking PUT was sent (not from the read before it, which an S3
        # outage can hold for longer than a lease).
        home._keeper = LeaseKeeper(lock, home._on_lost, acquired_at=lock.taken_at)
        home._keeper.start()
        try:
            named = previous.record.generation if previous is not None else None
            restore_started = time.monotonic()
            restored = home.places.restore(engine, named)
            stats.restore_seconds = time.monotonic() - restore_started
            home.restored_txid = restored.txid
            home.restored = home.restored_txid is not None
            home.behind_reason = behind_reason(previous, restored_txid=home.restored_txid, now_held=True)
            home._behind_since_s3 = behind_since(previous, home.behind_reason)
            if restored.fell_back:  # since when the newer place's writes are missing: unknown
                home.behind_reason = _fallback_reason(url, restored, home.behind_reason)
                home._behind_since_s3 = None
            if home._behind_since_s3 is not None and previous is not None:
                home.behind_since = previous.on_local_clock(home._behind_since_s3)
            home._take_place(previous, restored)
            prepare(engine.db_path)
            if not engine.db_path.is_file():
                raise RemoteLedgerError(f"ledger {url}: prepare() left no ledger file at {engine.db_path}")
            home._started = True
            engine.start(os.getpid())
            home._replicating = True
            engine.sync()
        except BaseException:
            home._abandon("opening failed")
            raise
        stats.open_seconds = time.monotonic() - started
        log.info(
            "ledger %s: restored %s in %.2f s%s",
            url,
            f"TXID {home.restored_txid}" if home.restored else "nothing (new ledger)",
            stats.open_seconds,
            f"; it may be behind: {home.behind_reason}" if home.may_be_behind else "",
        )
        return home

    # ------------------------------------------------------------------ while the run lasts

    @property
    def lost(self) -> str:
        """Why this run lost the ledger ('' while it holds it and Litestream runs)."""
        if self._keeper is not None and self._keeper.lost:
            return self._keeper.lost
        if self._replicating and not self._settled and not self.litestream.running:
            return f"ledger {self.url}: replication stopped during the run: {self.litestream.log_tail()}"
        return ""

    def check(self) -> None:
        """Raise RemoteLedgerLostError when this run may no longer hold the ledger (its lease lost, or past
        its deadline: another run may hold it now) or its writes would no longer reach S3. Call it immediately
        before each call that changes the service (the client's send guard) and each intent."""
        if self._keeper is not None:
            self._keeper.check()
        why = self.lost
        if why:
            raise RemoteLedgerLostError(why)

    def seconds_left(self) -> float | None:
        """Seconds this run may still send calls that change the service unless its lease is renewed before
        (0 once it may no longer hold the ledger; None before the lock is taken)."""
        if self._keeper is None:
            return None
        return 0.0 if self.lost else self._keeper.seconds_left()

    def sync(self, timeout: float = 60.0) -> int:
        """Push every committed transaction to S3 now and wait for it; the TXID S3 has."""
        self.check()
        return self.litestream.sync(timeout)

    def mark_reconciled(self) -> None:
        """Say this run looked up every item the restored copy did not show as settled: the next holder of a
        cleanly settled ledger will not be told it may be behind."""
        self._reconciled = True

    def _take_place(self, previous: LockView | None, restored: Restored) -> None:
        """Choose where this holding replicates: the place the lock names when its last holder released it
        after a verified final sync (nothing of it can still be on its way) and it was restored from; else
        a new generation (connectors.ledger_places), named in the lock before anything is written there."""
        record = previous.record if previous is not None else None
        clean = record is not None and record.state == FREE and record.txid is not None
        if record is None and restored.txid is None and not restored.unusable:
            clean = True  # a new ledger: nothing was ever written
        if clean and not restored.fell_back:  # restored from the place the lock names
            self.generation = restored.generation
        else:
            mine = self.lock.mine
            assert mine is not None
            self.generation = next_generation(restored.newest, mine.token)
            self.lock.move(self.generation)
            self._moved = True
            log.info("ledger %s: this run replicates into %s", self.url, describe(self.url, self.generation))
        self.litestream.replica = replace(
            self.litestream.replica, path=place_key(self.places.key, self.generation)
        )
        self.litestream.write_config()

    def _on_lost(self, why: str) -> None:
        self.litestream.abort(why)
        if self.on_lost is not None:
            self.on_lost(why)

    # ------------------------------------------------------------------ the end

    def settle(self, timeout: float = 120.0) -> int:
        """Stop Litestream (final sync), verify S3 has its last TXID, release the lock; the TXID.

        Close the job's Ledger first: a write after this is not replicated. On failure the lock is released
        marked "may be behind" (unless it was lost) and RemoteLedgerError / RemoteLedgerLostError is raised.
        """
        if self._settled:
            return self._settled_txid
        started = time.monotonic()
        try:
            self.check()
            status = self.litestream.stop(timeout)
            self._replicating = False
            if status != 0:
                raise RemoteLedgerError(
                    f"ledger {self.url}: litestream exited with status {status}: {self.litestream.log_tail()}"
                )
            local = self._verify_final_sync()
            self.check()
            if self._moved:
                self.places.prune(self.generation)
        except BaseException as exc:
            self._abandon(f"settling failed: {exc}")
            lost = self.lost
            if lost and isinstance(exc, RemoteLedgerError) and not isinstance(exc, RemoteLedgerLostError):
                raise RemoteLedgerLostError(lost) from None  # e.g. Litestream killed as the lease ended
            raise
        self._finish(txid=local, behind="" if self._reconciled else self.behind_reason)
        self._settled_txid = local
        self.stats.settle_seconds = time.monotonic() - started
        log.info("ledger %s: settled at TXID %d in %.2f s", self.url, local, self.stats.settle_seconds)
        return local

    def _verify_final_sync(self) -> int:
        """The TXID both Litestream's local state and S3 end at; RemoteLedgerError when they differ."""
        try:
            local, remote = self.litestream.local_txid(), self.litestream.replica_txid()
        except RemoteLedgerError as exc:
            raise RemoteLedgerError(f"ledger {self.url}: the final sync cannot be verified: {exc}") from None
        if remote != local or local == 0:
            raise RemoteLedgerError(
                f"ledger {self.url}: the final sync is not verified: S3 has TXID {remote}, the local "
                f"copy is at TXID {local}"
            )
        return local

    def _abandon(self, why: str) -> None:
        """Stop replicating and release the lock marked unverified (unless the lease is already lost)."""
        self.litestream.kill()
        mine = self.lock.mine
        if mine is None or (self._keeper is not None and self._keeper.lost):
            if self._keeper is not None:
                self._keeper.stop()
            self._settled = True
            self.litestream.close()
            return
        if self._started:
            txid, behind = (
                None,
                self.behind_reason or f"a run ({mine.holder.describe()}) ended unverified: {why}",
            )
        else:  # Litestream never ran: the replica is as this run found it, and so is the lock
            txid, behind = mine.txid, mine.behind
        try:
            self._finish(txid=txid, behind=behind[:500])
        except RemoteLedgerError as exc:
            log.error("ledger %s: could not release the lock after a failure: %s", self.url, exc)

    def _finish(self, *, txid: int | None, behind: str) -> None:
        if self._keeper is not None:
            self._keeper.stop()
        self._settled = True
        since = self._behind_since_s3
        if behind and not self.behind_reason:  # this run ended unverified: since it took the lock
            since = self._acquired_s3
        try:
            if self.lock.mine is not None:
                self.lock.release(txid=txid, behind=behind, behind_since=since_text(since))
        finally:
            self.litestream.close()

    def __enter__(self) -> RemoteLedger:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Settle whatever happened in the block (the job's own error wins over a settle error)."""
        if exc is None:
            self.settle()
            return
        try:
            self.settle()
        except RemoteLedgerError as settle_error:
            log.error("ledger %s: %s", self.url, settle_error)


def _fallback_reason(url: str, restored: Restored, reason: str) -> str:
    """Why a copy restored from an older place than the newest may be behind (with `reason`, if any)."""
    note = (
        f"a newer replica place could not be used ({'; '.join(restored.skipped)[:400]}): restored "
        f"{describe(url, restored.generation)} instead, which may miss later writes"
    )
    return f"{reason}; {note}" if reason else note


@dataclass(frozen=True)
class ReadOnlyCopy:
    """A remote ledger restored for reading (status, report): path exists only when the replica does."""

    url: str
    path: Path
    exists: bool
    txid: int | None
    behind_reason: str

    @property
    def may_be_behind(self) -> bool:
        """Whether the copy may miss committed writes (a run holds it now, or its last holder died)."""
        return bool(self.behind_reason)


@contextmanager
def open_readonly(url: str, s3: S3Config | None = None) -> Iterator[ReadOnlyCopy]:
    """Restore a remote ledger into a temporary folder without taking its lock; the folder goes on exit."""
    client, replica, _stats = _locate(url, s3)
    lock = LeaseLock(client, replica.bucket, replica.path + LOCK_SUFFIX, url, DEFAULT_LEASE_SECONDS)
    folder = tempfile.mkdtemp(prefix="vf-ledger-ro-")
    engine = Litestream(Path(folder) / LEDGER_FILE, replica)
    try:
        view = lock.read()
        named = view.record.generation if view is not None else None
        restored = Places(client, replica.bucket, replica.path, url).restore(engine, named)
        reason = behind_reason(view, restored_txid=restored.txid, now_held=False)
        if restored.fell_back:
            reason = _fallback_reason(url, restored, reason)
        yield ReadOnlyCopy(
            url=url,
            path=engine.db_path,
            exists=restored.txid is not None,
            txid=restored.txid,
            behind_reason=reason,
        )
    finally:
        engine.close()
        shutil.rmtree(folder, ignore_errors=True)

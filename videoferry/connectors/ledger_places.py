"""Where a remote ledger's replica lives: a place per holding that may have left a late writer, the newest
usable place restored (SQLite's integrity check), old places pruned.

A holder that lost its lease (stopped past it, or cut off from S3) may still have writes on their way:
requests its Litestream sent before it was stopped, or a Litestream that runs on. So a run that takes the
ledger from a holding that did not end cleanly replicates into a place of its own, '<key>/gen/<generation>',
named in the lock: late writes land in the old place, which nobody restores from while a newer one is usable.
A clean release (Litestream ended by itself after a verified final sync: nothing left on its way) hands its
place to the next holder. The generation '' is the place of ledgers written before places existed: '<key>'.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from videoferry.connectors.ledger_errors import RemoteLedgerError
from videoferry.connectors.litestream import Litestream

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

log = logging.getLogger(__name__)

#: The folder under the ledger's key that holds one place per generation.
GENERATIONS = "gen"
#: Older places a clean settle keeps (what a restore falls back to when a newer one is unusable).
KEEP_OLDER = 2


def place_key(key: str, generation: str) -> str:
    """The key prefix Litestream replicates a generation into ('' : the ledger's key itself)."""
    return f"{key}/{GENERATIONS}/{generation}" if generation else key


def describe(url: str, generation: str) -> str:
    """A place for messages: 'generation 00000003-1a2b3c4d of s3://b/k', or the ledger's own place."""
    return f"generation {generation} of {url}" if generation else f"the replica at {url}"


def generation_number(generation: str) -> int:
    """The counter a generation's name starts with (0 for '' and for a name not of ours)."""
    head = generation.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def next_generation(newest: int, token: str) -> str:
    """A new generation after the newest counter known: 8 digits (they sort), then the holding's token."""
    return f"{newest + 1:08d}-{token[:8]}"


class Places:
    """The places of one remote ledger in S3: listing, restoring the newest usable one, pruning."""

    def __init__(self, client: S3Client, bucket: str, key: str, url: str) -> None:
        self.client = client
        self.bucket = bucket
        self.key = key
        self.url = url

    def generations(self) -> list[str]:
        """The generations that hold objects, newest first ('' last when the ledger's own place does)."""
        found: list[str] = []
        legacy = False
        for prefix, is_folder in self._children(f"{self.key}/"):
            if is_folder and prefix == f"{self.key}/{GENERATIONS}/":
                found += [p.rstrip("/").rsplit("/", 1)[-1] for p, _ in self._children(prefix)]
            else:
                legacy = True
        found.sort(key=lambda g: (generation_number(g), g), reverse=True)
        return [*found, ""] if legacy else found

    def restore(self, engine: Litestream, named: str | None) -> Restored:
        """Restore into engine.db_path the place the lock names (None: there is no lock, so every place is a
        candidate), else the newest older place that restores and passes SQLite's integrity check; each one
        passed over is said (a warning, and Restored.skipped). Nothing restored when there is no replica at
        all; RemoteLedgerError when places hold objects but none is usable (a run must never start from an
        empty ledger then: it would make everything again)."""
        base = engine.replica
        found = self.generations()
        if named is None:
            order = found or [""]
        else:
            number = generation_number(named)
            order = [named, *(g for g in found if g != named and (generation_number(g) < number or not g))]
        newest = max(generation_number(g) for g in [*order, *found])
        done = Restored(txid=None, generation=order[0], newest=newest)
        try:
            for generation in order:
                engine.replica = replace(base, path=place_key(self.key, generation))
                engine.write_config()
                where = describe(self.url, generation)
                try:
                    txid = engine.restore()
                except RemoteLedgerError as exc:
                    done.skipped.append(f"{where}: {exc}")
                    done.unusable = True
                    continue
                if txid is None:
                    if done.skipped or generation == order[0]:
                        done.skipped.append(f"{where}: empty")
                    continue
                problem = integrity_problem(engine.db_path)
                if problem:
                    done.skipped.append(f"{where}: {problem}")
                    done.unusable = True
                    continue
                done.txid, done.generation = txid, generation
                break
            else:
                engine.clear()
                if done.unusable:
                    raise RemoteLedgerError(
                        f"ledger {self.url}: no usable replica ({'; '.join(done.skipped)[:800]})"
                    )
        finally:
            engine.replica = base
        if done.fell_back:
            log.warning(
                "ledger %s: restored %s: the newer place was not usable (%s)",
                self.url,
                describe(self.url, done.generation),
                "; ".join(done.skipped),
            )
        return done

    def prune(self, current: str) -> int:
        """Delete the places older than `current` beyond the KEEP_OLDER newest (ends quietly on an S3
        error: pruning is housekeeping); how many objects were deleted."""
        number = generation_number(current)
        deleted = 0
        try:
            older = [g for g in self.generations() if g != current and generation_number(g) < number]
            for generation in older[KEEP_OLDER:]:
                deleted += self._delete_place(generation)
        except (BotoCoreError, ClientError, RemoteLedgerError) as exc:
            log.warning("ledger %s: old replica places not pruned: %s", self.url, exc)
        if deleted:
            log.info("ledger %s: pruned %d objects of old replica places", self.url, deleted)
        return deleted

    def _delete_place(self, generation: str) -> int:
        if generation:
            keys = list(self._keys(f"{place_key(self.key, generation)}/"))
        else:  # the ledger's own place: everything under its key but the generations
            inside = f"{self.key}/{GENERATIONS}/"
            keys = [k for k in self._keys(f"{self.key}/") if not k.startswith(inside)]
        for start in range(0, len(keys), 1000):
            batch = [{"Key": k} for k in keys[start : start + 1000]]
            self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch})  # type: ignore[typeddict-item]
        return len(keys)

    def _children(self, prefix: str) -> Iterator[tuple[str, bool]]:
        """(key or folder prefix, is a folder) right under prefix."""
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, Delimiter="/"
            )
            for page in pages:
                for folder in page.get("CommonPrefixes", []):
                    yield str(folder.get("Prefix", "")), True
                for obj in page.get("Contents", []):
                    yield str(obj.get("Key", "")), False
        except (BotoCoreError, ClientError) as exc:
            raise RemoteLedgerError(f"ledger {self.url}: cannot list its replica: {exc}") from None

    def _keys(self, prefix: str) -> Iterator[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            for obj in page.get("Contents", []):
                yield str(obj.get("Key", ""))


@dataclass
class Restored:
    """What a restore brought back: its TXID (None: no replica), from which generation, what it passed
    over."""

    txid: int | None
    generation: str
    newest: int  #: the highest generation number found (a new one must be above it)
    skipped: list[str] = field(default_factory=list)
    unusable: bool = False  #: a place held objects that did not restore, or failed the integrity check

    @property
    def fell_back(self) -> bool:
        """Whether the place the lock names was passed over (unusable, or empty) for an older one."""
        return self.txid is not None and bool(self.skipped)


def integrity_problem(path: Path) -> str:
    """'' when SQLite's integrity check passes on the file, else what it says first."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("PRAGMA integrity_check").fetchmany(3)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"integrity check: {exc}"
    said = [str(row[0]) for row in rows]
    return "" if said == ["ok"] else "integrity check: " + "; ".join(said)[:300]

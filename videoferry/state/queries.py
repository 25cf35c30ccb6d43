"""Read-only ledger queries: item lists, reconcile look-ups, counts, summary and the report table."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from sqlite_utils import Database

from videoferry.state.columns import SPEC_COLUMNS
from videoferry.state.machine import CREATING, DONE, FINISHED, PROCESSING, STATES, UPLOADED, UPLOADING
from videoferry.state.models import Event, Item, Op, Run, parse_time

# The per-item report: every column but the secret upload_endpoint. This tuple is the only list report and
# export code reads from; tests assert the endpoint never appears.
REPORT_COLUMNS: tuple[str, ...] = (
    "key",
    "row",
    *SPEC_COLUMNS,
    "create_title",
    "state",
    "failed_from",
    "video_id",
    "status",
    "upload_offset",
    "bytes_total",
    "error_code",
    "error_message",
    "request_id",
    "attempts",
    "created_intent_at",
    "first_seen_run",
    "last_run",
    "updated_at",
    "done_at",
    "finished_at",
    "meta_pending",
)
_ORDER = "ORDER BY row IS NULL, row, key"
_CHUNK = 900  # bound parameters per IN (...) list


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _chunks(values: list[str], size: int = _CHUNK) -> Iterable[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def get_item(db: Database, key: str) -> Item | None:
    """The item with this key, or None."""
    for row in db.query("SELECT * FROM items WHERE key = ?", [key]):
        return Item.from_row(row)
    return None


def items(db: Database, states: Collection[str] | None = None, limit: int | None = None) -> list[Item]:
    """Items (optionally only those in states), in inventory order."""
    sql, params = "SELECT * FROM items", []  # type: tuple[str, list[Any]]
    if states is not None:
        states = list(states)
        if not states:
            return []
        sql += f" WHERE state IN ({_marks(len(states))})"
        params.extend(states)
    sql += f" {_ORDER}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [Item.from_row(r) for r in db.query(sql, params)]


def pending_keys(db: Database, states: Collection[str], limit: int | None = None) -> list[str]:
    """Keys of the items in states, in inventory order (cheap: no Item objects)."""
    states = list(states)
    if not states:
        return []
    sql = f"SELECT key FROM items WHERE state IN ({_marks(len(states))}) {_ORDER}"
    params: list[Any] = list(states)
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [r["key"] for r in db.query(sql, params)]


def keys_in(db: Database, states: Collection[str]) -> set[str]:
    """Keys of the items in states, in no order (the items_state index; no row is read but its key)."""
    states = list(states)
    if not states:
        return set()
    sql = f"SELECT key FROM items WHERE state IN ({_marks(len(states))})"
    return {key for (key,) in db.execute(sql, states).fetchall()}  # tuples: no dict per row


def creating_items(db: Database) -> list[Item]:
    """Items whose create outcome is unknown: reconcile each before any new create, oldest intent first."""
    return [
        Item.from_row(r)
        for r in db.query("SELECT * FROM items WHERE state = ? ORDER BY created_intent_at, key", [CREATING])
    ]


def title_rows(db: Database) -> list[tuple[str, str | None, str | None, str]]:
    """(key, parent_id, title, source) of every item: enough to tell which titles items share."""
    return [
        (r["key"], r["parent_id"], r["title"], r["source"])
        for r in db.query("SELECT key, parent_id, title, source FROM items")
    ]


def keys_for_videos(db: Database, video_ids: Iterable[str]) -> dict[str, str]:
    """video_id -> item key for the given ids that already belong to an item (reconcile must skip those)."""
    found: dict[str, str] = {}
    for chunk in _chunks(list(dict.fromkeys(video_ids))):
        sql = f"SELECT video_id, key FROM items WHERE video_id IN ({_marks(len(chunk))})"
        found.update({r["video_id"]: r["key"] for r in db.query(sql, chunk)})
    return found


def counts(db: Database) -> dict[str, int]:
    """Number of items in every state (zeros included), in STATES order."""
    found = {r["state"]: r["n"] for r in db.query("SELECT state, count(*) AS n FROM items GROUP BY state")}
    return {state: int(found.get(state, 0)) for state in STATES}


def count(db: Database, states: Collection[str], at_most: int | None = None) -> int:
    """Number of items in these states, or at_most when more are (min(count, at_most)).

    Through the items_state index, whose entries of these states it reads one by one: a count is O(items
    in these states), 3 ms for 100,000 planned items; at_most stops after that many (O(at_most)).
    """
    states = list(states)
    if not states or (at_most is not None and at_most <= 0):
        return 0
    where = f"FROM items WHERE state IN ({_marks(len(states))})"
    if at_most is None:
        rows = list(db.query(f"SELECT count(*) AS n {where}", states))
    else:
        rows = list(db.query(f"SELECT count(*) AS n FROM (SELECT 1 {where} LIMIT ?)", [*states, at_most]))
    return int(rows[0]["n"])


def report_rows(db: Database, states: Collection[str] | None = None) -> list[dict[str, Any]]:
    """The per-item report table (REPORT_COLUMNS; list columns as JSON text), in inventory order."""
    columns = ", ".join(f'"{c}"' for c in REPORT_COLUMNS)
    sql, params = f"SELECT {columns} FROM items", []  # type: tuple[str, list[Any]]
    if states is not None:
        states = list(states)
        sql += f" WHERE state IN ({_marks(len(states))})" if states else " WHERE 0"
        params.extend(states)
    rows = []
    for row in db.query(f"{sql} {_ORDER}", params):
        row["meta_pending"] = bool(row["meta_pending"])
        rows.append(row)
    return rows


def events(
    db: Database, key: str | None = None, run_id: str | None = None, limit: int | None = None
) -> list[Event]:
    """Journal rows, oldest first; with limit, the most recent limit rows."""
    where, params = [], []  # type: tuple[list[str], list[Any]]
    if key is not None:
        where.append("key = ?")
        params.append(key)
    if run_id is not None:
        where.append("run_id = ?")
        params.append(run_id)
    sql = "SELECT * FROM events" + (f" WHERE {' AND '.join(where)}" if where else "")
    if limit is None:
        return [Event.from_row(r) for r in db.query(sql + " ORDER BY event_id", params)]
    rows = list(db.query(sql + " ORDER BY event_id DESC LIMIT ?", [*params, limit]))
    return [Event.from_row(r) for r in reversed(rows)]


def get_op(db: Database, op_id: int) -> Op | None:
    """The operation with this id, or None."""
    for row in db.query("SELECT * FROM ops WHERE op_id = ?", [op_id]):
        return Op.from_row(row)
    return None


def ops(
    db: Database,
    *,
    owner_key: str | None = None,
    op_key: str | None = None,
    status: str | None = None,
    kind: str | None = None,
    run_id: str | None = None,
    target_id: str | None = None,
    created_id: str | None = None,
) -> list[Op]:
    """Operations matching every given filter, oldest first."""
    where, params = [], []  # type: tuple[list[str], list[Any]]
    for column, value in (
        ("item_key", owner_key),  # the column keeps its first name (old ledgers open as they are)
        ("op_key", op_key),
        ("status", status),
        ("kind", kind),
        ("run_id", run_id),
        ("target_id", target_id),
        ("created_id", created_id),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    sql = "SELECT * FROM ops" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY op_id"
    return [Op.from_row(r) for r in db.query(sql, params)]


def get_run(db: Database, run_id: str) -> Run | None:
    """The run with this id, or None."""
    for row in db.query("SELECT * FROM runs WHERE run_id = ?", [run_id]):
        return Run.from_row(row)
    return None


def runs(db: Database, status: str | None = None) -> list[Run]:
    """Runs, oldest first (optionally only those with this status)."""
    if status is None:
        return [Run.from_row(r) for r in db.query("SELECT * FROM runs ORDER BY started_at, run_id")]
    sql = "SELECT * FROM runs WHERE status = ? ORDER BY started_at, run_id"
    return [Run.from_row(r) for r in db.query(sql, [status])]


def _seconds(start: str | None, end: str | None) -> float | None:
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None:
        return None
    return (b - a).total_seconds()


def _totals(db: Database) -> dict[str, Any]:
    """Items, their bytes (size, else source size), bytes uploaded, attempts, re-attempts, meta_pending and
    attachments (materials asked, and those of finished items: attached)."""
    return next(
        db.query(
            f"""
            SELECT count(*) AS items,
                   coalesce(sum(coalesce(bytes_total, source_size, 0)), 0) AS bytes_total,
                   coalesce(sum(CASE
                       WHEN via = 'url' THEN 0
                       WHEN state IN ('{UPLOADED}', '{PROCESSING}', '{DONE}', '{FINISHED}',
                                      'error', 'aborted') AND video_id IS NOT NULL
                            THEN coalesce(bytes_total, source_size, 0)
                       ELSE upload_offset END), 0) AS bytes_uploaded,
                   coalesce(sum(attempts), 0) AS attempts,
                   coalesce(sum(max(attempts - 1, 0)), 0) AS reattempts,
                   coalesce(sum(meta_pending), 0) AS meta_pending,
                   coalesce(sum(json_array_length(attachments)), 0) AS materials,
                   coalesce(sum(CASE WHEN state = '{FINISHED}' THEN json_array_length(attachments) END), 0)
                       AS materials_attached
            FROM items
            """
        )
    )


def size(db: Database) -> tuple[int, int]:
    """(items, bytes_total) of the whole ledger, as summary() counts them: one pass over items, no journal."""
    totals = _totals(db)
    return int(totals["items"]), int(totals["bytes_total"])


def ledger_now(db: Database) -> dict[str, Any]:
    """What summary() says of the ledger now, whatever its scope: counts by state, the items' totals, error
    codes and warnings (LedgerReader keeps it while the file does not change)."""
    error_codes = {
        str(r["error_code"]): r["n"]
        for r in db.query(
            "SELECT error_code, count(*) AS n FROM items WHERE error_code IS NOT NULL "
            "GROUP BY error_code ORDER BY n DESC, error_code"
        )
    }
    return {"counts": counts(db), "totals": _totals(db), "error_codes": error_codes, "warnings": warnings(db)}


def summary(db: Database, run_id: str | None = None, now: dict[str, Any] | None = None) -> dict[str, Any]:
    """Counts by state, bytes, error codes, attempts and retries, first/last times and throughput.

    Counts, bytes and error codes describe the ledger now (``now``: ledger_now() of the file as it is, when
    the caller has it). Times, retries and throughput come from the journal: of one run when run_id is
    given, else of all runs. Bytes transferred are those of tus and single uploads (a URL import is fetched
    by the service); throughput divides them by the time from the first create intent to the last
    completed upload in scope.
    """
    now = now if now is not None else ledger_now(db)
    by_state, totals, error_codes = dict(now["counts"]), now["totals"], dict(now["error_codes"])
    scope, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
    # One pass over the journal (in scope) for its first and last times, retries and the first create intent.
    span = next(
        db.query(
            f"""
            SELECT min(time) AS first, max(time) AS last, coalesce(sum(kind = 'retry'), 0) AS retries,
                   min(CASE WHEN to_state = '{CREATING}' THEN time END) AS start
            FROM events {scope}
            """,
            params,
        )
    )
    and_scope = "AND run_id = ?" if run_id is not None else ""
    # The events' own terms first (the pair of states), the item's (via) apart: SQLite then looks up the item
    # of an upload's end only, not of every transition (a 100k-item ledger: 1.5 s -> 0.35 s).
    window = next(
        db.query(
            f"""
            SELECT max(e.time) AS end,
                   coalesce(sum(coalesce(i.bytes_total, i.source_size, 0)), 0) AS bytes
            FROM events e JOIN items i ON i.key = e.key
            WHERE e.kind = 'transition'
              AND ((e.from_state = '{UPLOADING}' AND e.to_state = '{UPLOADED}')
                   OR (e.from_state = '{CREATING}' AND e.to_state = '{PROCESSING}'))
              AND (e.from_state = '{UPLOADING}' OR i.via = 'single')
              {and_scope.replace("run_id", "e.run_id")}
            """,
            params,
        )
    )
    retries = span["retries"]
    elapsed = _seconds(span["start"], window["end"])
    throughput = window["bytes"] / elapsed if elapsed and elapsed > 0 else None
    return {
        "run_id": run_id,
        "items": totals["items"],
        "counts": by_state,
        "complete": by_state[DONE] + by_state[FINISHED],
        "bytes_total": totals["bytes_total"],
        "bytes_uploaded": totals["bytes_uploaded"],
        "bytes_transferred": window["bytes"],
        "error_codes": error_codes,
        "attempts": totals["attempts"],
        "retries": retries + totals["reattempts"],
        "meta_pending": totals["meta_pending"],
        "attachments": {"materials": totals["materials"], "attached": totals["materials_attached"]},
        "first_event_at": span["first"],
        "last_event_at": span["last"],
        "throughput_bytes_per_second": throughput,
        "warnings": [dict(w) for w in now["warnings"]],
    }


#: The most warnings a summary lists (the journal keeps every one).
MAX_WARNINGS = 200


def warnings(db: Database) -> list[dict[str, Any]]:
    """The ledger's warnings (journal kind 'warning'), each (key, message) once, oldest first: what the
    service did that is not a failure but worth saying (a title it cut to its cap)."""
    # NOT INDEXED: one pass over the journal. Grouping by key, SQLite would otherwise walk events_key and read
    # every event by its key (a 600k-event ledger: 1.1 s, against 0.07 s for the pass); warnings are few.
    rows = db.query(
        "SELECT key, message, min(time) AS time FROM events NOT INDEXED WHERE kind = 'warning' "
        "GROUP BY key, message ORDER BY time, key LIMIT ?",
        [MAX_WARNINGS],
    )
    return [{"key": r["key"], "message": r["message"]} for r in rows]

"""What one run did, read from its journal events: the items or units it moved, retried, finished, skipped."""

from __future__ import annotations

from typing import Any

from sqlite_utils import Database

from videoferry.state.machine import ABORTED, CREATING, DONE, ERROR, FAILED, FINISHED, UnitState

_COMPLETE = (DONE, FINISHED)
_FAILED = (FAILED, ERROR, ABORTED)


def _quoted(states: tuple[str, ...]) -> str:
    return ", ".join(f"'{s}'" for s in states)


def item_activity(db: Database, run_id: str) -> dict[str, int]:
    """What the run `run_id` did to the items: `created` (a create sent), `retried` (failed before and tried
    again), `completed` (complete now, reached in this run), `failed` (failed, error or aborted now, moved
    there in this run), `already_done` (complete before this run: skipped), `call_retries` (calls it repeated
    after a failure).

    One pass over the run's events (a 100k-item run's 600k events: about 0.4 s) and two over the items
    (an item's last_run is the last run that changed it; a plan never touches a complete item)."""
    moved = next(
        db.query(
            f"""
            SELECT count(DISTINCT CASE WHEN to_state = '{CREATING}' THEN key END) AS created,
                   count(DISTINCT CASE WHEN from_state IN ({_quoted(_FAILED)}) THEN key END) AS retried,
                   coalesce(sum(kind = 'retry'), 0) AS call_retries
            FROM events WHERE run_id = ? AND kind IN ('transition', 'retry')
            """,
            [run_id],
        )
    )
    ended = next(
        db.query(
            f"""
            SELECT coalesce(sum(state IN ({_quoted(_COMPLETE)}) AND last_run = :run), 0) AS completed,
                   coalesce(sum(state IN ({_quoted(_COMPLETE)}) AND coalesce(last_run, '') != :run), 0)
                       AS already_done
            FROM items
            """,
            {"run": run_id},
        )
    )
    failed = next(
        db.query(
            f"""
            SELECT count(*) AS n FROM items
            WHERE state IN ({_quoted(_FAILED)}) AND key IN (
                SELECT key FROM events
                WHERE run_id = ? AND kind = 'transition' AND to_state IN ({_quoted(_FAILED)})
            )
            """,
            [run_id],
        )
    )
    return {**{k: int(v) for k, v in (*moved.items(), *ended.items())}, "failed": int(failed["n"])}


def unit_activity(db: Database, run_id: str, unit_keys: set[str]) -> dict[str, int]:
    """What the run `run_id` did to these apply units: `retried` (failed before and tried again), `done`,
    `failed`, `worked` (any change), `already_done` (done before this run: skipped)."""
    moved: dict[str, list[tuple[str | None, str | None]]] = {}
    for event in db.query(
        "SELECT key, from_state, to_state FROM events WHERE run_id = ? AND kind = 'unit' ORDER BY event_id",
        [run_id],
    ):
        if event["key"] in unit_keys:
            moved.setdefault(event["key"], []).append((event["from_state"], event["to_state"]))
    done_now = {
        row["unit_key"]
        for row in db.query("SELECT unit_key FROM units WHERE state = ?", [UnitState.DONE.value])
        if row["unit_key"] in unit_keys
    }
    worked = {k for k, steps in moved.items() if any(f is not None for f, _t in steps)}
    figures: dict[str, Any] = {
        "retried": sum(1 for steps in moved.values() if any(f == UnitState.FAILED for f, _t in steps)),
        "done": sum(1 for k in done_now if k in moved),
        "failed": sum(1 for steps in moved.values() if steps[-1][1] == UnitState.FAILED),
        "worked": len(worked),
        "already_done": len(done_now - moved.keys()),
    }
    return figures

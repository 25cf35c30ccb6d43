"""Planning: read the inventory, route every row (tus / url / single) and upsert it into the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from connectors.inventory import Inventory, RowError, read_inventory
from connectors.s3 import S3Config
from state.ledger import Ledger
from state.machine import COMPLETE_STATES
from state.models import PlanResult
from tasks.routing import RoutingError, choose_mode


@dataclass
class Plan:
    """The inventory as read, the rows routing refused, and what the ledger made of the rest."""

    inventory: Inventory
    rejected: list[RowError] = field(default_factory=list)
    result: PlanResult | None = None
    to_do: int = 0
    already_done: int = 0

    @property
    def rejected_rows(self) -> list[dict[str, Any]]:
        """Every bad row (inventory and routing) as dicts: row, field, value, reason."""
        errors = sorted([*self.inventory.errors, *self.rejected], key=lambda e: (e.row, e.field))
        return [{"row": e.row, "field": e.field, "value": e.value, "reason": e.reason} for e in errors]


def read_plan(inventory_uri: str, *, parent_id: str | None, via: str, s3: S3Config | None) -> Plan:
    """Read the inventory and route its rows; nothing is written anywhere."""
    inventory = read_inventory(inventory_uri, default_parent_id=parent_id, s3=s3)
    plan = Plan(inventory=inventory)
    return plan


def ledger_rows(plan: Plan, via: str) -> Iterator[dict[str, Any]]:
    """The inventory's good rows in the ledger's form; rows that cannot travel by `via` are rejected."""
    for row in plan.inventory.rows.iter_rows(named=True):
        try:
            mode = choose_mode(row["source"], via)
        except RoutingError as exc:
            plan.rejected.append(RowError(row["row"], "source", str(row["source"])[:200], str(exc)))
            continue
        yield {
            "key": row["key"],
            "row": row["row"],
            "source": row["source"],
            "source_size": row["size"],
            "title": row["title"],
            "description": row["description"],
            "parent_id": row["parent_id"],
            "tags": row["tags"] or None,
            "chapters": [{"time": c["time"], "title": c["title"]} for c in row["chapters"] or []] or None,
            "privacy_type": row["privacy_type"],
            "privacy_domains": row["privacy_domains"] or None,
            "via": mode,
        }


def preview(plan: Plan, ledger: Ledger | None, via: str) -> dict[str, int]:
    """Dry run: how many rows are new, already done, or waiting in the ledger (nothing is written)."""
    counts = {"new": 0, "done": 0, "pending": 0}
    for row in ledger_rows(plan, via):
        item = ledger.get(row["key"]) if ledger is not None else None
        if item is None:
            counts["new"] += 1
        elif item.state in COMPLETE_STATES:
            counts["done"] += 1
        else:
            counts["pending"] += 1
    return counts


def apply_plan(plan: Plan, ledger: Ledger, run_id: str, via: str) -> PlanResult:
    """Upsert the routed rows into the ledger (one transaction)."""
    plan.result = ledger.plan(ledger_rows(plan, via), run_id)
    plan.already_done = plan.result.already_done
    return plan.result

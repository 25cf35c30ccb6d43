"""Planning: read the inventory (validated and routed once, as item specs) and upsert it into the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from connectors.inventory import Inventory, read_inventory
from connectors.s3 import S3Config
from core.item import COMPLETE_STATES, ItemSpec, in_shard
from state.ledger import Ledger
from state.models import PlanResult
from tasks.lookup import shared_titles


@dataclass
class Plan:
    """The inventory as read (good rows as item specs, bad rows as RowErrors) and what the ledger did."""

    inventory: Inventory
    result: PlanResult | None = None
    already_done: int = 0
    #: (K, N): only the items whose key falls in shard K of N are planned (N coordinators, one inventory).
    shard: tuple[int, int] | None = None

    def specs(self) -> Iterator[ItemSpec]:
        """The item specs this run plans: every good row, or those of its shard."""
        return (s for s in self.inventory.specs() if in_shard(s.key, self.shard))

    def shared_titles(self) -> frozenset[tuple[str, str]]:
        """(parent, title_group_key) pairs several rows of the whole inventory fall in, every shard's rows
        counted (tasks/lookup.shared_titles)."""
        return shared_titles((s.parent_id, s.title) for s in self.inventory.specs())

    @property
    def rejected_rows(self) -> list[dict[str, Any]]:
        """Every bad row as dicts: row, field, value, reason."""
        errors = self.inventory.errors
        return [{"row": e.row, "field": e.field, "value": e.value, "reason": e.reason} for e in errors]


def read_plan(
    inventory_uri: str,
    *,
    parent_id: str | None,
    via: str,
    s3: S3Config | None,
    shard: tuple[int, int] | None = None,
) -> Plan:
    """Read the inventory and route its rows by `via`; nothing is written anywhere."""
    inventory = read_inventory(inventory_uri, default_parent_id=parent_id, via=via, s3=s3)
    return Plan(inventory=inventory, shard=shard)


def preview(plan: Plan, ledger: Ledger | None) -> dict[str, int]:
    """Dry run: how many rows are new, already done, or waiting in the ledger (nothing is written)."""
    counts = {"new": 0, "done": 0, "pending": 0}
    for spec in plan.specs():
        item = ledger.get(spec.key) if ledger is not None else None
        if item is None:
            counts["new"] += 1
        elif item.state in COMPLETE_STATES:
            counts["done"] += 1
        else:
            counts["pending"] += 1
    return counts


def store_plan(plan: Plan, ledger: Ledger, run_id: str) -> PlanResult:
    """Upsert the item specs into the ledger (one transaction)."""
    plan.result = ledger.plan(plan.specs(), run_id)
    plan.already_done = plan.result.already_done
    return plan.result

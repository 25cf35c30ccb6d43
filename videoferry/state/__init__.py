"""The SQLite ledger: schema, item and operation state machines, reconciliation queries."""

from __future__ import annotations

from videoferry.state.errors import InvalidTransition, LedgerBusyError, LedgerError, UnknownItem
from videoferry.state.ledger import Ledger
from videoferry.state.machine import STATES, TRANSITIONS
from videoferry.state.models import Chapter, Event, Item, Op, PlanResult, Run

__all__ = [
    "STATES",
    "TRANSITIONS",
    "Chapter",
    "Event",
    "InvalidTransition",
    "Item",
    "Ledger",
    "LedgerBusyError",
    "LedgerError",
    "Op",
    "PlanResult",
    "Run",
    "UnknownItem",
]

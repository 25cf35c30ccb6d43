"""The SQLite ledger: schema, item and operation state machines, reconciliation queries."""

from __future__ import annotations

from state.errors import InvalidTransition, LedgerBusyError, LedgerError, UnknownItem
from state.ledger import Ledger
from state.machine import STATES, TRANSITIONS
from state.models import Chapter, Event, Item, Op, PlanResult, Run

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

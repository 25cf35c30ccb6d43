"""Exceptions raised by the ledger; messages name the ledger file or item key, never a secret."""

from __future__ import annotations


class LedgerError(Exception):
    """Base class: the ledger cannot do what was asked (bad file, bad state, SQLite failure)."""


class LedgerBusyError(LedgerError):
    """Another run holds the ledger (its run lock, or a write lock beyond the busy timeout)."""


class UnknownItem(LedgerError):
    """No item with this key is in the ledger."""

    def __init__(self, key: str) -> None:
        super().__init__(f"item {key!r} is not in the ledger")
        self.key = key


class InvalidTransition(LedgerError):
    """A state change the state machine does not allow (items and operations alike)."""

    def __init__(self, key: str, from_state: str | None, to_state: str, why: str = "") -> None:
        text = f"item {key!r}: cannot go from {from_state or '(new)'} to {to_state}"
        super().__init__(f"{text}: {why}" if why else text)
        self.key = key
        self.from_state = from_state
        self.to_state = to_state

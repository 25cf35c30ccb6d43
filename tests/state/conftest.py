"""Fixtures for ledger tests: a fresh ledger file per test, with a run started."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from videoferry.state import Ledger


@pytest.fixture()
def ledger_path(tmp_path: Path) -> Path:
    """Where the test's ledger lives (not yet created)."""
    return tmp_path / "work" / "ledger.db"


@pytest.fixture()
def ledger(ledger_path: Path) -> Iterator[Ledger]:
    """An open ledger (closed after the test)."""
    opened = Ledger.open(ledger_path, busy_timeout=5.0)
    yield opened
    opened.close()


@pytest.fixture()
def run_id(ledger: Ledger) -> str:
    """A run started on the ledger."""
    return ledger.start_run("migrate", {"transfers": 4})

"""The integrity check begun ahead of an open: its verdict stands only for the file as it was checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from state import Ledger, LedgerError, integrity
from state.integrity import checked_meanwhile
from tests.state.helpers import shared_lock_held, spec


def _planned(path: Path, items: int = 3000) -> None:
    with Ledger.open(path) as ledger:
        ledger.plan([spec(f"k{i}", i) for i in range(items)], None)


def _garble_mid_file(path: Path) -> None:
    data = bytearray(path.read_bytes())
    start = 4096 * (len(data) // 4096 // 2) + 10
    data[start : start + 3000] = b"\x5a" * 3000
    path.write_bytes(bytes(data))


def test_a_file_changed_after_the_check_began_is_checked_again(ledger_path: Path) -> None:
    _planned(ledger_path)
    with checked_meanwhile(ledger_path):  # begun while the file was sound
        pass
    integrity.settle(ledger_path)  # and ended: its verdict is "ok"
    _garble_mid_file(ledger_path)  # then damaged before the open: that verdict must not stand
    with pytest.raises(LedgerError) as caught:
        Ledger.open(ledger_path)
    assert "not a valid videoferry ledger" in str(caught.value)


def test_a_damaged_file_checked_ahead_is_refused_at_open(ledger_path: Path) -> None:
    _planned(ledger_path)
    _garble_mid_file(ledger_path)
    with checked_meanwhile(ledger_path):
        pass
    with pytest.raises(LedgerError) as caught:
        Ledger.open(ledger_path)
    assert str(ledger_path) in str(caught.value) and "integrity check" in str(caught.value)


def test_a_file_that_is_not_sqlite_is_worded_as_always(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is an inventory, not a ledger\n" * 20)
    with checked_meanwhile(path):
        pass
    with pytest.raises(LedgerError, match="not a valid videoferry ledger"):
        Ledger.open(path)


def test_a_sound_file_opens_on_the_verdict_once(ledger_path: Path) -> None:
    _planned(ledger_path, items=10)
    with checked_meanwhile(ledger_path):
        pass
    assert integrity.pending(ledger_path)
    with Ledger.open(ledger_path) as ledger:  # takes the verdict (the file is as it was checked)
        assert ledger.counts()["planned"] == 10
    assert not integrity.pending(ledger_path), "a verdict is taken once"


def test_a_body_that_raises_leaves_no_verdict(ledger_path: Path) -> None:
    _planned(ledger_path, items=10)
    with pytest.raises(ValueError), checked_meanwhile(ledger_path):
        raise ValueError("the inventory was bad")
    assert not integrity.pending(ledger_path)


def test_nothing_is_begun_for_a_missing_file_or_none(ledger_path: Path) -> None:
    with checked_meanwhile(ledger_path), checked_meanwhile(None):
        pass
    assert not integrity.pending(ledger_path)
    assert not ledger_path.exists()


def test_the_open_after_a_check_ahead_keeps_this_process_shared_lock(ledger_path: Path) -> None:
    # The check's connection is open while the open begins (a ledger big enough to take a while). Had the
    # open read the file's header meanwhile, closing that descriptor would drop this process's POSIX locks:
    # another process could then see no reader, checkpoint and remove the WAL under a run that writes to it.
    _planned(ledger_path, items=20_000)
    with checked_meanwhile(ledger_path):
        pass
    with Ledger.open(ledger_path) as ledger:
        assert ledger.counts()["planned"] == 20_000
        assert shared_lock_held(ledger_path)

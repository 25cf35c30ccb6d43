"""The live display draws items, bytes, rate, ETA and API calls per minute from the ledger."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

from rich.console import Console

from tests.state.helpers import spec
from videoferry.flows.progress import LiveDisplay
from videoferry.state.ledger import Ledger


class _Counter:
    class stats:  # noqa: N801 - mimics ApiRateLimiter.stats
        acquired = 0


def test_live_display_draws_from_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = Ledger.open(path)
    run = ledger.start_run("migrate", {})
    ledger.plan([spec(k, i, source=f"/v/{k}.mp4", via="tus") for i, k in enumerate("abc")], run)
    ledger.begin_create("a", run, "a")
    ledger.create_started_upload("a", run, "11111111-1111-1111-1111-111111111111", "http://x/e", 1000)
    ledger.record_offset("a", 400)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140, color_system=None)
    counter = _Counter()
    with LiveDisplay(str(path), console, counter):
        deadline = time.monotonic() + 10
        while "API calls" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        counter.stats.acquired = 7  # seven calls made after the display started
        while "API calls in the last minute: 7" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    ledger.close()
    text = out.getvalue()
    assert "API calls in the last minute: 7" in text
    assert "planned 2" in text and "uploading 1" in text
    assert "items" in text and "bytes" in text


def test_no_display_without_a_terminal(tmp_path: Path) -> None:
    out = io.StringIO()
    with LiveDisplay(str(tmp_path / "none.db"), Console(file=out, force_terminal=False), None):
        pass
    assert out.getvalue() == ""


def _upload(ledger: Ledger, run: str, key: str, size: int) -> None:
    ledger.begin_create(key, run, key)
    video = f"{'abc'.index(key) + 1}" * 8 + "-1111-1111-1111-111111111111"
    ledger.create_started_upload(key, run, video, "http://x/e", size)
    ledger.record_offset(key, size)
    ledger.upload_complete(key, run)


def _line_where(out: io.StringIO, pattern: str) -> str | None:
    """The last drawn status line matching pattern, polled for a bounded time (None: never drawn)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = re.findall(pattern, out.getvalue())
        if found:
            return str(found[-1])
        time.sleep(0.05)
    return None


def test_sent_items_waiting_for_processing_are_said_and_the_eta_follows_the_items(tmp_path: Path) -> None:
    # Every byte sent, no item done yet (the service is processing): the line says why items lag the bytes,
    # and the ETA comes from the items once they finish (issue 44: it stayed "-" the whole run).
    path = tmp_path / "l.db"
    ledger = Ledger.open(path)
    run = ledger.start_run("migrate", {})
    ledger.plan([spec(k, i, source=f"/v/{k}.mp4", via="tus") for i, k in enumerate("abc")], run)
    for key in "abc":
        _upload(ledger, run, key, 1000)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=160, color_system=None)
    with LiveDisplay(str(path), console, _Counter()):
        assert _line_where(out, r"3 sent, waiting for processing[^\n]*ETA -") is not None, out.getvalue()
        ledger.set_status("a", run, "done")  # one item finished: the items now move at a known rate
        eta = _line_where(out, r"2 sent, waiting for processing[^\n]*ETA (\d+) s")
    ledger.close()
    assert eta is not None, out.getvalue()

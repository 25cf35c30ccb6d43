"""The live progress display of a migration (rich): items done, bytes sent, what waits for processing, rate,
ETA, API calls per minute."""

from __future__ import annotations

import threading
import time
from collections import deque
from types import TracebackType

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.text import Text

from videoferry.state.ledger import Ledger
from videoferry.tasks.migrate.report import size_text


class LiveDisplay:
    """Reads the ledger (its own read connection) and the limiter's counter twice a second and redraws (on a
    terminal, unless not enabled: -q)."""

    def __init__(
        self, ledger_path: str, console: Console, api_counter: object | None = None, *, enabled: bool = True
    ) -> None:
        self.ledger_path = ledger_path
        self.console = console
        self.enabled = enabled
        self.api_counter = api_counter
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: deque[tuple[float, int, int, int]] = deque(maxlen=240)  # (time, bytes, calls, done)
        self._bar = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(), console=console
        )
        self._items = self._bar.add_task("items done", total=None)
        self._bytes = self._bar.add_task("bytes sent", total=None)
        self._line = Text("")

    def __enter__(self) -> LiveDisplay:
        if self.enabled and self.console.is_terminal:
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _api_calls(self) -> int:
        stats = getattr(self.api_counter, "stats", None)
        return int(getattr(stats, "acquired", 0))

    def _run(self) -> None:
        ledger: Ledger | None = None
        with Live(Group(self._bar, self._line), console=self.console, refresh_per_second=2, transient=False):
            while not self._stop.wait(0.5):
                try:
                    if ledger is None:
                        ledger = Ledger.open(self.ledger_path, create=False)
                    self._draw(ledger.summary())
                except Exception:  # the display never disturbs the run
                    continue
        if ledger is not None:
            ledger.close()

    def _draw(self, summary: dict[str, object]) -> None:
        counts = summary.get("counts") or {}
        assert isinstance(counts, dict)
        total_items = sum(int(v) for v in counts.values())
        complete = int(counts.get("done", 0)) + int(counts.get("finished", 0))
        sent = int(summary.get("bytes_uploaded") or 0)  # type: ignore[call-overload]
        total_bytes = int(summary.get("bytes_total") or 0)  # type: ignore[call-overload]
        now = time.monotonic()
        self._samples.append((now, sent, self._api_calls(), complete))
        self._bar.update(self._items, completed=complete, total=total_items or None)
        self._bar.update(self._bytes, completed=sent, total=total_bytes or None)
        first = self._samples[0]
        span = max(now - first[0], 1e-6)
        rate = (sent - first[1]) / span
        minute_ago = next((s for s in self._samples if s[0] >= now - 60), first)
        calls = self._samples[-1][2] - minute_ago[2]
        states = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        waiting = sum(int(counts.get(s, 0)) for s in ("uploaded", "processing"))
        wait = f" | {waiting} sent, waiting for processing" if waiting else ""
        eta = _eta(
            (total_bytes - sent, rate),  # the bytes still to send
            (total_items - complete, (complete - first[3]) / span),  # the items still to finish
        )
        self._line.plain = (
            f"{states}{wait} | {size_text(rate)}/s | ETA {'-' if eta is None else f'{eta:.0f} s'}"
            f" | API calls in the last minute: {calls}"
        )


def _eta(*remaining: tuple[float, float]) -> float | None:
    """Seconds until the last of these ends, each (what is left, how fast it goes now): the slowest one
    known; None while something is left and nothing has moved yet (no rate to tell by)."""
    left = [(amount, rate) for amount, rate in remaining if amount > 0]
    if not left or any(rate <= 0 for _amount, rate in left):
        return None if left else 0.0
    return max(amount / rate for amount, rate in left)

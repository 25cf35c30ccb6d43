"""Where the time of one migration goes: startup, creates, the processing tail, finish and exit."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.ratelog import api_calls, kind

#: API calls that create a video (tus init, single upload or URL import).
CREATES = ("init", "create")


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Timeline:
    """Seconds from the command's start (wall clock) to each landmark of one run."""

    first_call: float
    run_started: float
    first_create: float
    last_create: float
    last_call: float
    run_finished: float
    exited: float

    @classmethod
    def read(cls, started: float, exited: float, entries: list[dict[str, Any]], ledger: Path) -> Timeline:
        """From the emulator's request log and the ledger's run row (both wall clock, same machine)."""
        calls = sorted(float(e["time"]) for e in api_calls(entries))
        creates = sorted(float(e["time"]) for e in api_calls(entries) if kind(e) in CREATES)
        conn = sqlite3.connect(ledger)
        try:
            row = conn.execute("SELECT started_at, finished_at FROM runs ORDER BY started_at DESC").fetchone()
        finally:
            conn.close()
        return cls(
            first_call=calls[0] - started,
            run_started=_stamp(row[0]) - started,
            first_create=creates[0] - started,
            last_create=creates[-1] - started,
            last_call=calls[-1] - started,
            run_finished=_stamp(row[1]) - started,
            exited=exited - started,
        )

    def note(self) -> str:
        """`startup 4.1 s (...), creates 60.2 s, tail 2.3 s, finish 0.1 s, exit 1.2 s`."""
        return (
            f"startup {self.first_create:.1f} s (command start -> first create: imports, first API call at "
            f"{self.first_call:.1f} s, run opened at {self.run_started:.1f} s), "
            f"creates {self.last_create - self.first_create:.1f} s (first -> last create), "
            f"tail {self.last_call - self.last_create:.1f} s (last create -> last API call: processing, "
            f"the poll that saw it done), finish {self.run_finished - self.last_call:.1f} s (-> run closed "
            f"in the ledger), exit {self.exited - self.run_finished:.1f} s (-> process exit)"
        )

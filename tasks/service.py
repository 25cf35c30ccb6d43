"""A run's service client with its rate limiter, kept beside the ledger: restarted runs share the budget."""

from __future__ import annotations

import os
from pathlib import Path

from connectors.client import VideoClient
from connectors.config import Settings
from connectors.limiter import ApiRateLimiter, rate_limiter

#: The rate limiter's default store, beside the ledger: a run restarted right after a crash (or a second run
#: with ledgers in the same directory) shares the budget and the 429 pause with the runs before it.
LIMITER_FILE = "videoferry-limiter.db"


def run_limiter(settings: Settings, ledger_path: str) -> ApiRateLimiter:
    """The rate limiter of a run: VIDEOFERRY_LIMITER_URL when set, else a SQLite file beside the ledger.

    An in-process limiter would forget the calls of a run killed a moment ago: its successor would start with
    a full budget while the service still counts them (and would ignore a 429 pause the killed run was in).
    """
    url = settings.limiter_url
    if not url:
        folder = Path(ledger_path).resolve().parent
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LIMITER_FILE
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        url = f"sqlite://{path}"
    return rate_limiter(
        settings.token, url=url, per_second=settings.rate_per_second, per_minute=settings.rate_per_minute
    )



def run_client(settings: Settings, ledger_path: str) -> VideoClient:
    """The client of a run on the ledger at ledger_path: its calls count against the run's rate limiter."""
    return VideoClient.from_settings(settings, limiter=run_limiter(settings, ledger_path))

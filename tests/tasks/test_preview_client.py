"""A dry run's client: its calls count against the rate budget a run left beside the ledger; none, no file."""

from __future__ import annotations

from pathlib import Path

from videoferry.connectors.config import Settings
from videoferry.connectors.limiter import rate_limiter
from videoferry.tasks.service import LIMITER_FILE, preview_client, run_limiter


def _settings(token: str) -> Settings:
    # loopback addresses that are never called: the client is only built
    return Settings(api_url="http://127.0.0.1:9", upload_url="http://127.0.0.1:9", token=token)


def test_a_dry_run_beside_a_runs_store_counts_in_that_store(tmp_path: Path) -> None:
    # A dry run started while (or just after) a run on the same ledger calls: counted in this process only,
    # its calls would fill the window the run already filled, and the service would answer 429 to both.
    settings = _settings("preview-shared-token")
    ledger = tmp_path / "ledger.db"
    store = run_limiter(settings, ledger)
    assert (tmp_path / LIMITER_FILE).exists()
    with preview_client(settings, ledger) as client:
        assert client.transport.limiter is store
        assert client.transport.limiter.backend == "sqlite"


def test_a_dry_run_with_no_store_writes_no_file(tmp_path: Path) -> None:
    settings = _settings("preview-alone-token")
    ledger = tmp_path / "ledger.db"
    with preview_client(settings, ledger) as client:
        assert client.transport.limiter is rate_limiter(settings.token)
        assert client.transport.limiter.backend == "memory"
    assert list(tmp_path.iterdir()) == []

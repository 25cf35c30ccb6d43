"""The service goes away in the middle of a migration: the run ends within its bound
(VIDEOFERRY_OUTAGE_SECONDS) instead of polling a dead host for the whole wait bound, and what it says names
the host and what failed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from connectors.config import ConfigError
from emulator.control import EmulatorControl
from emulator.server import EmulatorServer
from state.ledger import Ledger
from tasks.stop import OUTAGE_ENV, Outage, Stop, outage_seconds
from tests.flows.helpers import cli_argv, cli_env, clip_rows, write_inventory

#: How long the run may take to get its items into processing.
STARTED_WITHIN = 120.0
#: Not a speed figure: the bound the run is given is 3 s; a run still there after this does not stop at
#: all (before, it polled the dead host up to --wait-timeout, an hour by default).
GONE_WITHIN = 120.0


def _states(ledger: Path) -> list[str]:
    if not ledger.exists():
        return []
    try:
        book = Ledger.open(ledger, create=False)
    except Exception:  # the run is still creating its tables
        return []
    try:
        return [item.state for item in book.items()]
    finally:
        book.close()


def test_a_service_gone_mid_run_ends_the_run_within_its_bound_naming_the_host(
    tmp_path: Path, clip_factory: object
) -> None:
    server = EmulatorServer(data_dir=tmp_path / "emulator")
    server.start()
    try:
        control = EmulatorControl(server.base_url)
        ws = control.create_workspace()
        control.set_processing(ws, "manual")  # the videos stay processing: the run polls the service
        control.close()
        inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3))  # type: ignore[arg-type]
        ledger = tmp_path / "ledger.db"
        args = ["migrate", str(inventory), "--no-prefect", "--parent-id", ws.project_id]
        args += ["--ledger", str(ledger), "--poll-interval", "5"]
        env = cli_env(ws, VIDEOFERRY_OUTAGE_SECONDS="3")
        with (tmp_path / "out.txt").open("wb") as out, (tmp_path / "err.txt").open("wb") as err:
            proc = subprocess.Popen(cli_argv(*args), env=env, stdout=out, stderr=err)
        deadline = time.monotonic() + STARTED_WITHIN
        while _states(ledger).count("processing") < 3:
            assert proc.poll() is None, (tmp_path / "err.txt").read_text()
            assert time.monotonic() < deadline, "the items were not processing in time"
            time.sleep(0.2)
    finally:
        server.stop()  # the service goes away: its port now refuses connections

    try:
        code = proc.wait(timeout=GONE_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the run was still polling a dead service {GONE_WITHIN:g} s after it went away")
    said = (tmp_path / "out.txt").read_text() + (tmp_path / "err.txt").read_text()
    host = urlsplit(ws.base_url).netloc
    (tmp_path / "said.txt").write_text(said)
    assert code == 1, said
    assert "Traceback" not in said
    assert "the service has not answered for" in said, said
    assert f"connection refused by {host}" in said, said
    # the retry lines say what failed, not (status=None code=None request_id=None)
    assert "status=None" not in said
    retries = [line for line in said.splitlines() if "retrying" in line]
    assert retries and all(f"connection refused by {host}" in line for line in retries), retries
    # every item not done is named by its source, with what the rerun does
    for name in ("clip-0.mp4", "clip-1.mp4", "clip-2.mp4"):
        assert any(name in line and "rerun" in line for line in said.splitlines()), said


def test_a_bad_outage_bound_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OUTAGE_ENV, "soon")
    with pytest.raises(ConfigError, match="VIDEOFERRY_OUTAGE_SECONDS='soon'"):
        outage_seconds()


def test_one_failed_call_alone_never_stops_a_run() -> None:
    stop = Stop()
    answered = [time.monotonic() - 3600]  # the last answer an hour ago (webhooks: rare polls)
    outage = Outage(stop, lambda: answered[0], seconds=60)
    outage.failed("connection refused by 127.0.0.1:9")
    assert not stop.is_set()
    outage._since = time.monotonic() - 61  # the outage began 61 s ago (no sleep: its start is moved back)
    answered[0] = outage._since - 1
    outage.failed("cannot resolve host api.example.com")
    assert stop.is_set()
    assert "2 calls failed, the last: cannot resolve host api.example.com" in stop.reason

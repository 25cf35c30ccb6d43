"""The service goes away in the middle of a migration: the run ends within its bound
(VIDEOFERRY_OUTAGE_SECONDS) instead of polling a dead host for the whole wait bound, and what it says names
the host and what failed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.flows.helpers import cli_argv, cli_env, clip_rows, write_inventory
from videoferry.connectors.client.silence import Silence
from videoferry.connectors.config import ConfigError
from videoferry.connectors.errors import ServiceSilentError
from videoferry.emulator.control import EmulatorControl
from videoferry.emulator.server import EmulatorServer
from videoferry.state.ledger import Ledger
from videoferry.tasks.stop import OUTAGE_ENV, outage_seconds

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


def _silence(answered_ago: float) -> tuple[Silence, list[str]]:
    """A bound of 60 s whose service last answered `answered_ago` s ago; what it says when spent."""
    silence, said = Silence(60), list[str]()
    silence.on_silent = said.append
    silence.last_answer = time.monotonic() - answered_ago
    return silence, said


def test_one_failed_call_alone_never_stops_a_run() -> None:
    silence, said = _silence(3600)  # the last answer an hour ago (webhooks: rare polls)
    silence.no_answer(time.monotonic(), "connection refused by 127.0.0.1:9")
    assert not said and silence.timeout(30) == 30  # the silence began with that call, not an hour ago


def test_each_attempt_gets_what_is_left_of_the_bound_then_nothing_is_sent() -> None:
    silence, said = _silence(3600)  # no sleep: the silent call's start is put in the past
    silence.no_answer(time.monotonic() - 50, "no answer from 127.0.0.1:9 within 30 s")
    assert 9 <= silence.timeout(30) <= 10  # not the call's own 30 s: what is left of the 60
    silence.no_answer(time.monotonic(), "no answer from 127.0.0.1:9 within 10 s")  # the same silence
    silence._since = time.monotonic() - 61  # its start moved back (no sleep)
    with pytest.raises(ServiceSilentError, match="not answered for 61 s"):
        silence.timeout(30)  # nothing is sent any more
    assert len(said) == 1 and "2 calls failed, the last: no answer from 127.0.0.1:9 within 10 s" in said[0]
    with pytest.raises(ServiceSilentError):
        silence.timeout(30)
    assert len(said) == 1  # said once


def test_any_answer_ends_a_silence() -> None:
    silence, said = _silence(3600)
    silence.no_answer(time.monotonic() - 50, "connection refused by 127.0.0.1:9")
    silence.answered()  # an HTTP error too is an answer
    assert silence.timeout(30) == 30 and silence.silent_for() == 0 and not said

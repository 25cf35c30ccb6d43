"""Auth: a missing, invalid or other-workspace token fails fast, says what to fix, and nothing is retried."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.flows.helpers import clip_rows, write_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.state.ledger import Ledger


def _migrate(
    inventory: Path, ledger: Path, parent_id: str, env_changes: dict[str, str | None]
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    args = ["migrate", str(inventory), "--no-prefect", "--parent-id", parent_id, "--ledger", str(ledger)]
    return subprocess.run(
        [sys.executable, "-m", "videoferry.flows.cli", *args, "--transfers", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _service(ws: Workspace, token: str | None) -> dict[str, str | None]:
    return {
        "VIDEOFERRY_API_URL": ws.base_url,
        "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
        "VIDEOFERRY_TOKEN": token,
    }


def _counts(ledger: Path) -> dict[str, int]:
    book = Ledger.open(ledger, create=False)
    try:
        return {state: n for state, n in book.counts().items() if n}
    finally:
        book.close()


def test_a_missing_token_names_the_variable_and_sends_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2, metadata=False))
    mark = time.time()
    result = _migrate(inventory, tmp_path / "ledger.db", emu.project_id, _service(emu, None))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "VIDEOFERRY_TOKEN" in result.stderr
    assert emu_control.requests(since=mark) == []
    assert not (tmp_path / "ledger.db").exists()


def test_an_invalid_token_stops_at_the_first_call_and_is_not_retried(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    bad = "vf-revoked-0123456789abcdef"
    mark = time.time()
    result = _migrate(inventory, tmp_path / "ledger.db", emu.project_id, _service(emu, bad))
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "VIDEOFERRY_TOKEN" in output and "invalid" in output
    log = [(r["method"], r["path"], r["status"]) for r in emu_control.requests(since=mark)]
    # the two address probes (connectors/client/probe.py: one GET of a route per host, without the token:
    # 400 for the missing token, 405 for the method), then the first call that carries the token, refused,
    # and not retried
    probes = [("GET", "/v1/videos", 400), ("GET", "/v2/init", 405)]
    assert sorted(call for call in log if call in probes) == probes, log
    assert [call for call in log if call not in probes] == [("GET", "/v1/videos", 401)], log
    assert bad not in output
    assert emu_control.videos(emu) == []
    assert not (tmp_path / "ledger.db").exists()  # checked before the ledger: nothing planned, nothing lost


def test_another_workspaces_token_fails_fast_naming_the_token(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    other = emu_control.create_workspace()  # the token used belongs to `other`; the parent to `emu`
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 4, metadata=False))
    mark = time.time()
    result = _migrate(inventory, tmp_path / "ledger.db", emu.project_id, _service(emu, other.token))
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    # spec 5.2: the service answers a token of another workspace with 401 / 100102
    assert "belongs to another workspace" in output and "VIDEOFERRY_TOKEN" in output
    calls = [
        (r["method"], r["path"], r["status"]) for r in emu_control.requests(other.workspace_id, since=mark)
    ]
    assert calls == [("GET", "/v1/videos", 200), ("POST", "/v2/init", 401)]  # one refusal, never repeated
    assert emu_control.requests(emu.workspace_id, since=mark) == []
    assert emu_control.videos(emu) == [] and emu_control.videos(other) == []
    assert other.token not in output
    assert _counts(tmp_path / "ledger.db") == {"planned": 4}  # a token refused: the run stops, nothing lost

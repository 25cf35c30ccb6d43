"""No secret of setup (token, stream keys, restream keys, passwords, codes) in output, ledger or logs."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.flows.helpers import cli_env
from tests.flows.test_setup import SECRET_ENV, conference, write
from videoferry.emulator.control import EmulatorControl, Workspace

DRM_PASSWORD = "drm-callback-pass-9"


def videoferry(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`videoferry ARGS` through the console script's entry point (the job commands are registered there)."""
    argv = [sys.executable, "-c", "from videoferry.flows.cli import main; main()", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)


def ledger_text(path: Path) -> str:
    """Every row of every table of the ledger, as text."""
    with sqlite3.connect(path) as conn:
        return "\n".join(conn.iterdump())


def test_no_secret_in_output_ledger_or_logs(
    tmp_path: Path, ws: Workspace, emu_control: EmulatorControl
) -> None:
    data = conference(ws, rooms=4)
    data["events"][2]["privacy_share"] = {"password": "${ROOM_PW}"}
    data["events"][2].pop("unique_codes")
    data["drm"] = {"workspace": {"url": "http://127.0.0.1:9/cb", "username": "drm", "password": "${DRM_PW}"}}
    file = write(tmp_path / "c.yaml", data)
    env = cli_env(
        ws,
        **SECRET_ENV,
        DRM_PW=DRM_PASSWORD,
        VIDEOFERRY_RATE_PER_SECOND="500",
        VIDEOFERRY_RATE_PER_MINUTE="30000",
        PYTHONWARNINGS="ignore",
    )
    ledger, outputs = tmp_path / "l.db", tmp_path / "out"
    common = ["--ledger", str(ledger)]
    # a refused restream create (its error answer echoes what was sent) and a lost event answer
    emu_control.set_faults(
        ws,
        [
            {"kind": "error", "status": 400, "method": "POST", "path": "/restreams$", "times": 1},
            {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/live/events$", "times": 1},
        ],
    )
    runs = [videoferry(["setup", "up", file, *common, "--outputs", str(outputs)], env)]
    data["events"][0]["restreams"].append({"name": "extra", "url": "rtmp://x.example/a", "key": "${FB_KEY}"})
    data["events"][0]["latency_mode"] = "reduced"
    write(tmp_path / "c.yaml", data)
    runs += [videoferry(["setup", "plan", file, *common, "--show-unchanged"], env)]
    runs += [videoferry(["setup", "up", file, *common, "--outputs", str(outputs)], env)]
    runs += [videoferry(["setup", "drift", file, *common], env)]
    assert [r.returncode for r in runs] == [0, 0, 1, 1], [r.stderr[-2000:] for r in runs]  # extra: missing
    assert "failed: create restream Room 00 / extra" in runs[2].stdout

    streamkeys = [line.split(",")[-1] for line in (outputs / "events.csv").read_text().splitlines()[1:]]
    codes = [
        line.split(",")[0]
        for path in (outputs / "codes").rglob("*.csv")
        for line in path.read_text().splitlines()[2:]
    ]
    assert len(streamkeys) == 4 and all(streamkeys) and len(codes) == 6
    secrets = [ws.token, DRM_PASSWORD, *SECRET_ENV.values(), *streamkeys, *codes]
    shown = "\n".join(r.stdout + r.stderr for r in runs) + ledger_text(ledger)
    leaked = [s for s in secrets if s in shown]
    assert leaked == []
    assert "plan:" in runs[1].stdout and "latency_mode: standard -> reduced" in runs[1].stdout


def test_a_literal_secret_is_refused_without_echo(tmp_path: Path, ws: Workspace) -> None:
    data = conference(ws, rooms=1)
    data["events"][0]["restreams"][0]["key"] = "literal-key-in-file"
    file = write(tmp_path / "c.yaml", data)
    run = videoferry(["setup", "plan", file, "--ledger", str(tmp_path / "l.db")], cli_env(ws))
    assert run.returncode == 2
    assert "c.yaml:" in run.stderr and "restreams[0].key: must be a reference" in run.stderr
    assert "literal-key-in-file" not in run.stdout + run.stderr

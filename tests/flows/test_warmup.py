"""The CLI's early start of Prefect's temporary server: the flow run uses it, a configured server wins."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Starts the warmup, joins it, runs a one-line flow, and prints what it saw (as JSON) before exiting.
SCRIPT = """
import json, os, sys
from videoferry.flows.warmup import ServerWarmup
warmup = ServerWarmup().start()
started = warmup._process is not None
warmup.join()
seen = {"started": started, "api_url": warmup.api_url, "env": os.environ.get("PREFECT_API_URL"),
        "running": warmup._process is not None}
if warmup.api_url:
    from prefect import flow
    from prefect.client.orchestration import get_client

    @flow(name="warmup-probe")
    def probe() -> int:
        return 7

    seen["result"] = probe()
    with get_client(sync_client=True) as client:
        seen["client_url"] = str(client.api_url)
        seen["flow_runs"] = len(client.read_flow_runs())
print(json.dumps(seen))
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_LOGGING_LEVEL="WARNING",
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
    )
    env.update(extra)
    return env


def _run(env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return seen


def _port_closed(url: str, bound: float = 30.0) -> bool:
    """Poll (bounded) until nothing listens on the URL's port any more."""
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) != 0:
                return True
        time.sleep(0.1)
    return False


def test_the_early_server_is_the_flow_runs_and_stops_with_the_process(tmp_path: Path) -> None:
    seen = _run(_env(tmp_path))
    assert seen["started"] and seen["api_url"] and seen["env"] == seen["api_url"]
    assert seen["result"] == 7
    assert str(seen["client_url"]).rstrip("/") == seen["api_url"]  # not a second temporary server
    assert seen["flow_runs"] == 1
    assert _port_closed(str(seen["api_url"]))


def test_a_server_named_by_the_profile_wins_and_the_early_one_is_stopped(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        'active = "elsewhere"\n\n[profiles.elsewhere]\nPREFECT_API_URL = "http://127.0.0.1:9/api"\n'
    )
    seen = _run(_env(tmp_path, PREFECT_PROFILES_PATH=str(profiles)))
    assert seen["started"]  # started on speculation (the environment names no server) ...
    assert seen["api_url"] is None and seen["env"] is None and not seen["running"]  # ... then stopped


def test_nothing_starts_when_the_environment_names_a_server(tmp_path: Path) -> None:
    seen = _run(_env(tmp_path, PREFECT_API_URL="http://127.0.0.1:9/api"))
    assert not seen["started"] and seen["api_url"] is None


def test_the_early_server_dies_with_a_command_killed_by_sigkill(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys\n"
        "from videoferry.flows.warmup import ServerWarmup\n"
        "warmup = ServerWarmup().start()\n"
        "warmup.join()\n"
        "print(warmup.api_url, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=_env(tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # run() returns once nothing holds the pipes: a server outliving the script would (it inherited them).
    assert proc.returncode == -9, proc.stderr[-3000:]
    url = proc.stdout.strip().splitlines()[-1]
    assert url.startswith("http://127.0.0.1:")
    assert _port_closed(url)  # the server got SIGTERM when its parent died

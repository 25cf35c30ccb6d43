"""A standalone Prefect server, the prefect command, and prefect.yaml's deployments: for the deploy tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.flows.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
PREFECT = str(Path(sys.executable).with_name("prefect"))
POOL = "videoferry"


def _wait(check: Any, bound: float, what: str) -> Any:
    """Poll check() until it returns something true, at most `bound` seconds."""
    deadline = time.monotonic() + bound
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound:g} s")
        time.sleep(0.3)


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture()
def prefect_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    """`prefect server start` on a loopback port with its own PREFECT_HOME; the environment to reach it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
    )
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait(lambda: _healthy(env["PREFECT_API_URL"]) or server.poll() is not None, 120, "the server")
        assert server.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
        yield env
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _prefect(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PREFECT, "--no-prompt", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def _declared() -> dict[str, dict[str, Any]]:
    """The deployments prefect.yaml declares, by name."""
    document = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d for d in document["deployments"]}



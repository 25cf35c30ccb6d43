"""The in-process server (start/stop, ports, default workspace) and `videoferry emulator` as a process."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from videoferry.emulator.server import EmulatorServer, PortUnavailableError


def test_in_process_server_lifecycle(tmp_path: Path) -> None:
    server = EmulatorServer(data_dir=tmp_path, rate_per_minute=2)
    server.start()
    try:
        default = server.default
        assert default["base_url"] == server.base_url != server.upload_url
        assert set(default) == {"base_url", "upload_url", "token", "workspace_id", "project_id", "folder_id"}
        headers = {"Authorization": f"Bearer {default['token']}"}
        statuses = [httpx.get(f"{server.base_url}/v1/videos", headers=headers).status_code for _ in range(3)]
        assert statuses == [200, 200, 429]
        assert httpx.post(f"{server.upload_url}/v2/init", headers={}, json={}).status_code == 400
        assert httpx.get(f"{server.upload_url}/_emulator/requests").status_code == 404
    finally:
        server.stop()
    try:
        httpx.get(f"{server.base_url}/v1/videos", timeout=2)
        reachable = True
    except httpx.TransportError:
        reachable = False
    assert not reachable


def test_cli_prints_the_default_workspace_first() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "videoferry.flows.cli", "emulator", "--port", "0", "--upload-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = json.loads(process.stdout.readline())
        assert {"base_url", "upload_url", "token", "workspace_id", "project_id"} <= set(first)
        response = httpx.get(f"{first['base_url']}/v1/videos", headers={"Authorization": first["token"]})
        assert response.status_code == 200
        made = httpx.post(f"{first['base_url']}/_emulator/workspaces").json()
        assert made["token"] != first["token"]
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    assert process.returncode is not None


def test_a_busy_port_is_one_line_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        server = EmulatorServer(port=port)
        with pytest.raises(PortUnavailableError, match=f"port {port} .*already in use.*--port"):
            server.start()
        assert not server.data_dir.exists()  # nothing left behind
        with pytest.raises(ValueError, match=f"port {port} .*--upload-port"):  # the CLI prints a ValueError
            EmulatorServer(data_dir=tmp_path, upload_port=port).start()
        for command in (["-m", "videoferry.flows.cli", "emulator"], ["-m", "videoferry.emulator"]):
            done = subprocess.run(
                [sys.executable, *command, "--port", str(port), "--upload-port", "0"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 2, done.stderr
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and f"port {port}" in lines[0] and "in use" in lines[0], done.stderr
            assert "Traceback" not in done.stderr and done.stdout == ""

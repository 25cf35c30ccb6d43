"""A running Prefect server (`prefect server start`) on a free loopback port with its own PREFECT_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from bench.workload import free_port

STARTUP_BOUND = 180.0


class PrefectServer:
    """A Prefect API server in its own process; `env` reaches it (PREFECT_API_URL, PREFECT_HOME)."""

    def __init__(self, workdir: Path, home: Path | None = None) -> None:
        self.workdir = workdir
        self.home = home or workdir / "prefect-server-home"
        self.log_path = workdir / f"{self.home.name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}
        self.start_seconds = 0.0
        self._log: object = None

    def start(self) -> PrefectServer:
        """Start it, wait (bounded) until /api/health answers, and warm it up as serving would have.

        A server's first request that reads its database takes about 0.6 s here (set up on first use; a
        server that has been running answers it in milliseconds): one such request is made before anything
        is measured, so a run "through a running server" does not pay for the server's first minute.
        """
        port = free_port()
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PREFECT_HOME": str(self.home),
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        }
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self._log = log
        prefect = Path(sys.executable).parent / "prefect"
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env={**env, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + STARTUP_BOUND
        while not self._healthy():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prefect server did not start (see {self.log_path})")
            time.sleep(0.2)
        self.start_seconds = time.perf_counter() - started
        httpx.get(f"{self.env['PREFECT_API_URL']}/admin/version", timeout=30).raise_for_status()
        httpx.post(f"{self.env['PREFECT_API_URL']}/flow_runs/filter", json={"limit": 1}, timeout=30)
        return self

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.env['PREFECT_API_URL']}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL after 30 s)."""
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        log = self._log
        if log is not None and hasattr(log, "close"):
            log.close()
        self._log = None

    def __enter__(self) -> PrefectServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

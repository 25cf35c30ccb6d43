"""Prefect's temporary server, started in its own process the moment the command starts."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from videoferry.connectors.tls import tls_context

log = logging.getLogger(__name__)

#: The API URLs of the temporary servers this process started (gone when the command returns).
_STARTED: set[str] = set()


def is_temporary(api_url: str | None) -> bool:
    """Whether a flow run on this API URL is kept by a temporary server: one this process started, or none
    named (Prefect then starts its own); either stops when the command returns."""
    return not api_url or api_url in _STARTED


#: What Prefect gives the temporary server it starts itself (prefect.server.api.server.SubprocessASGIServer):
#: no UI, the ephemeral server's settings.
SERVER_ENV = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
#: uvicorn exits with 3 when its port was taken meanwhile: another port is tried, this many times.
PORT_ATTEMPTS = 5
HEALTH_INTERVAL = 0.05
#: prctl(2) option: the signal the calling process gets when its parent dies.
PR_SET_PDEATHSIG = 1
#: The least time the started server is given to answer (Prefect's own setting when it says more).
DEFAULT_STARTUP_TIMEOUT = 90.0


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerWarmup:
    """Starts the temporary Prefect API server a flow run of this process would start (only when no
    PREFECT_API_URL is set in the environment), in a subprocess, as soon as the command starts.

    Prefect starts the same server itself when the flow begins, and only after importing the whole Prefect
    server into this process to do so (seconds of work before the server process even starts). Here the
    server process starts first (the command and environment Prefect uses) and starts up on the other core
    while this process imports and checks the token. join() then reads Prefect's settings: when a profile
    names a server, or temporary servers are off, the process is stopped and Prefect decides as usual;
    otherwise it waits until the server answers and PREFECT_API_URL names it for the rest of the process,
    so the flow run uses it. The server stops when the process exits, after Prefect's own exit handlers
    (which still send to it).
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0
        self.api_url: str | None = None

    def start(self) -> ServerWarmup:
        """Start the server process (no-op when PREFECT_API_URL is set)."""
        if os.environ.get("PREFECT_API_URL"):
            return self
        try:
            self._port = _free_port()
            self._process = _spawn(self._port)
        except (OSError, ModuleNotFoundError) as exc:  # the flow run then starts the server itself
            log.debug("could not start Prefect's temporary server early: %s", type(exc).__name__)
            return self
        # Registered before Prefect registers its exit handlers, so it runs after them (last in, first out).
        atexit.register(self.stop)
        return self

    def join(self) -> None:
        """Make the started server the run's once it answers (or stop it: Prefect then decides as usual)."""
        if self._process is None:
            return
        try:
            from prefect.settings import (
                PREFECT_API_URL,
                PREFECT_SERVER_EPHEMERAL_ENABLED,
                PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
            )

            if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
                self.stop()  # a profile names a server, or temporary servers are off
                return
            # At least DEFAULT_STARTUP_TIMEOUT: Prefect's 20 s is too short for the first start after an
            # install (its server's modules are compiled then) on a busy machine.
            setting = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value() or 0
            timeout = max(float(setting), DEFAULT_STARTUP_TIMEOUT)
            url = self._wait_healthy(float(timeout))
        except Exception as exc:  # the flow run starts a server itself and reports its failure
            log.debug("starting Prefect's temporary server failed: %s", type(exc).__name__)
            url = None
        if url is None:
            self.stop()
            return
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = url
        _STARTED.add(url)
        refresh_global_settings_context()  # Prefect read its settings when imported: read them again
        self.api_url = url

    def _wait_healthy(self, timeout: float) -> str | None:
        """The server's API URL once /health answers 200 (a new port when uvicorn found this one taken)."""
        deadline = time.monotonic() + timeout
        attempts = 1
        with httpx.Client(timeout=2.0, verify=tls_context()) as http:
            while self._process is not None and time.monotonic() < deadline:
                code = self._process.poll()
                if code == 3 and attempts < PORT_ATTEMPTS:
                    attempts += 1
                    self._port = _free_port()
                    self._process = _spawn(self._port)
                    continue
                if code is not None:
                    log.debug("Prefect's temporary server exited with %s while starting", code)
                    return None
                url = f"http://127.0.0.1:{self._port}/api"
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(f"{url}/health").status_code == 200:
                        return url
                time.sleep(HEALTH_INTERVAL)
        return None

    def stop(self) -> None:
        """Stop the server process (idempotent); the process exit does it too."""
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _spawn(port: int) -> subprocess.Popen[bytes]:
    """The server process, as Prefect's SubprocessASGIServer runs it."""
    spec = importlib.util.find_spec("prefect")  # where Prefect is installed, without importing it
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("prefect")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--app-dir",
            str(Path(spec.origin).parent.parent),
            "--factory",
            "prefect.server.api.server:create_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "error",
            "--lifespan",
            "on",
        ],
        # Prefect passes its whole environment; the service's token and addresses are not the server's.
        env={**{k: v for k, v in os.environ.items() if not k.startswith("VIDEOFERRY_")}, **SERVER_ENV},
        stdin=subprocess.DEVNULL,
        # Its own session: a terminal's Ctrl-C goes to the command's process group, and the command still
        # needs the server to record the interrupted flow run (it stops the server itself, or dies with it).
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


def _die_with_parent() -> None:
    """In the server process before it starts: SIGTERM when the command's process dies, however it dies.

    The exit handler stops the server when the command ends; a command killed with SIGKILL (or by the
    kernel's OOM killer) runs no handler, and its server would otherwise outlive it. Linux's
    PR_SET_PDEATHSIG; the command spawns the server from its main thread, which lives as long as it does.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

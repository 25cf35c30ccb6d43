"""The servers a benchmark runs against: the emulator and moto S3 as subprocesses, a loopback file server."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from videoferry.emulator.control import EmulatorControl

#: The repository root (the benchmarks run the project's own modules from here).
REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60.0

#: Fake AWS settings for moto: nothing can reach real AWS.
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def _first_line(proc: subprocess.Popen[str], what: str) -> str:
    """The child's first stdout line; kills it when nothing comes within START_TIMEOUT."""
    timer = threading.Timer(START_TIMEOUT, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        timer.cancel()
    if not line:
        proc.wait(5)
        raise RuntimeError(f"{what} did not start (exit status {proc.returncode})")
    return line


def _stop(proc: subprocess.Popen[str] | None) -> None:
    """Interrupt a child we started (it cleans up on SIGINT); kill it when it does not exit in time."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class EmulatorProcess:
    """`videoferry emulator` on free loopback ports in its own process (its CPU and memory stay out of ours).

    Its data directory (every uploaded byte) lives under `workdir` and is removed when it stops.
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: subprocess.Popen[str] | None = None
        self.default: dict[str, Any] = {}
        self.base_url = ""
        self.control: EmulatorControl | None = None
        self._log: Any = None

    def start(self) -> EmulatorProcess:
        """Start it and wait for its first line (the default workspace)."""
        tmp = self.workdir / "emulator-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1")
        self._log = open(self.workdir / "emulator.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "videoferry.flows.cli", "emulator", "--port", "0", "--upload-port", "0"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.default = json.loads(_first_line(self.proc, "the emulator"))
        self.base_url = str(self.default["base_url"])
        self.control = EmulatorControl(self.base_url, timeout=120.0)
        return self

    @property
    def pid(self) -> int:
        """The emulator's process id."""
        assert self.proc is not None
        return self.proc.pid

    def ctl(self) -> EmulatorControl:
        """The control API client."""
        assert self.control is not None, "start() first"
        return self.control

    def stop(self) -> None:
        """Stop it (SIGINT: it removes its data directory)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        _stop(self.proc)
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


_MOTO_MAIN = """
import sys, time
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"http://{host}:{port}", flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    server.stop()
"""


#: moto keeps each object's bytes in temporary files (TMPDIR). On the disk, writing back a 512 MiB object
#: stalled moto's CompleteMultipartUpload now and then (1.0 s, then 1.9 s, for either copy of archive_copy and
#: backup_copy alike: the rounds' spread, issue 49); in memory it held at 1.2 s. So its TMPDIR is in
#: MEMORY_TMP when that has MEMORY_TMP_ROOM free bytes (the largest benchmark keeps 1.5 GiB there at once).
MEMORY_TMP = Path("/dev/shm")
MEMORY_TMP_ROOM = 8 * 1024**3


def moto_tmp(workdir: Path) -> tuple[Path, bool]:
    """The directory moto's temporary files go to, and whether it is in memory (removed by its user)."""
    if MEMORY_TMP.is_dir() and os.access(MEMORY_TMP, os.W_OK):
        free = os.statvfs(MEMORY_TMP)
        if free.f_bavail * free.f_frsize >= MEMORY_TMP_ROOM:
            return Path(tempfile.mkdtemp(prefix="videoferry-bench-moto-", dir=MEMORY_TMP)), True
    tmp = workdir / "moto-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp, False


class MotoProcess:
    """moto's S3 server on 127.0.0.1 (free port) in its own process, with fake credentials.

    `env` holds the variables a client needs (fake credentials, AWS_ENDPOINT_URL, VIDEOFERRY_S3_ENDPOINT_URL).
    Its temporary files (the objects' bytes) are in memory where the machine allows (moto_tmp).
    """

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: subprocess.Popen[str] | None = None
        self.endpoint = ""
        self.env: dict[str, str] = {}
        self.tmp: Path | None = None
        self.tmp_in_memory = False

    def start(self) -> MotoProcess:
        """Start it and wait for its endpoint URL."""
        self.tmp, self.tmp_in_memory = moto_tmp(self.workdir)
        env = dict(os.environ, **FAKE_AWS, TMPDIR=str(self.tmp))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _MOTO_MAIN],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.endpoint = _first_line(self.proc, "moto").strip()
        if not self.endpoint.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError("moto did not listen on loopback")
        self.env = {
            **FAKE_AWS,
            "AWS_ENDPOINT_URL": self.endpoint,
            "VIDEOFERRY_S3_ENDPOINT_URL": self.endpoint,
        }
        return self

    @property
    def pid(self) -> int:
        """moto's process id."""
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        """Stop it (and remove its temporary files when they are in memory)."""
        _stop(self.proc)
        self.proc = None
        if self.tmp is not None and self.tmp_in_memory:
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp = None

    def __enter__(self) -> MotoProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


class FileServer:
    """A plain HTTP server on 127.0.0.1 serving one directory (the URLs a URL import fetches)."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="bench-files", daemon=True)

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

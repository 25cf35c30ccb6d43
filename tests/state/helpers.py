"""Helpers for ledger tests: item specs and driving an item to a given state through the public API."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from videoferry.core.item import Chapter, ItemSpec, PrivacyType, Via
from videoferry.state import Ledger

ENDPOINT = "https://upload.example.test/tus/SECRET-CAPABILITY-0123456789"
REPO = Path(__file__).resolve().parents[2]


def _chapters(value: Iterable[Any]) -> tuple[Chapter, ...]:
    return tuple(Chapter(float(c[0]), str(c[1])) for c in value)


def spec(key: str, number: int | None = 1, **fields: Any) -> ItemSpec:
    """An ItemSpec with a source and title derived from key; keyword arguments override any field.

    Plain values are accepted for convenience: via / privacy_type as text, lists for tags, domains and
    chapters ((time, title) pairs).
    """
    values: dict[str, Any] = {
        "key": key,
        "row": number,
        "source": f"/videos/{key}.mp4",
        "parent_id": "",
        "via": Via.TUS,
        "title": f"Title {key}",
    }
    values.update(fields)
    values["via"] = Via(values["via"])
    if values.get("privacy_type") is not None:
        values["privacy_type"] = PrivacyType(values["privacy_type"])
    for name in ("tags", "privacy_domains"):
        if name in values:
            values[name] = tuple(values[name])
    if "chapters" in values:
        values["chapters"] = _chapters(values["chapters"])
    return ItemSpec(**values)


def endpoint_for(key: str) -> str:
    """A distinct secret-looking endpoint per item."""
    return f"{ENDPOINT}-{key}"


def drive(
    ledger: Ledger, key: str, state: str, run_id: str | None, *, via: str = "tus", size: int = 1000
) -> None:
    """Plan key (if new) and move it along the main path until it is in state.

    failed / error / aborted are reached from processing (a video exists); use failed_from() for others.
    """
    if ledger.get(key) is None:
        ledger.plan([spec(key, via=via, source_size=size)], run_id)
    if state == "planned":
        return
    ledger.begin_create(key, run_id, f"Title {key}")
    if state == "creating":
        return
    if via == "tus":
        ledger.create_started_upload(
            key, run_id, f"vid-{key}", endpoint_for(key), size, request_id="req-init"
        )
        if state == "uploading":
            return
        ledger.record_offset(key, size)
        ledger.upload_complete(key, run_id)
        if state == "uploaded":
            return
        ledger.set_status(key, run_id, "processing")
    else:
        ledger.create_accepted(key, run_id, f"vid-{key}", request_id="req-single", status="uploading")
    if state == "processing":
        return
    if state in ("error", "aborted"):
        ledger.set_status(key, run_id, state, message="the file could not be decoded")
        return
    if state == "failed":
        ledger.fail(key, run_id, "watch_timeout", "gave up waiting")
        return
    ledger.set_status(key, run_id, "done")
    if state == "done":
        return
    ledger.finished(key, run_id)
    assert state == "finished", state


def failed_from(ledger: Ledger, key: str, origin: str, run_id: str | None) -> None:
    """Drive key to origin, then fail it there."""
    drive(ledger, key, origin, run_id)
    ledger.fail(key, run_id, 400400, f"failed while {origin}", request_id="req-fail")


def sigkill_mid_transaction(script: str, ledger_path: Path) -> str:
    """Run a ledger script in a child process (argv: the ledger path, the repository) until it prints a line
    from inside its transaction and waits on stdin, then SIGKILL it there; returns that line."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(ledger_path), str(REPO)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    return line


#: From another process: a write lock on the bytes where SQLite's unix locks keep SHARED (PENDING_BYTE + 2,
#: 510 bytes). Refused while a connection of the calling process holds the database file.
_SHARED_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000002)
    print("free")
except OSError:
    print("held")
"""


def shared_lock_held(path: Path) -> bool:
    """Whether this process holds SQLite's SHARED lock on the file as the kernel sees it (another process's
    view: the one that decides whether it may checkpoint and remove the WAL)."""
    probe = [sys.executable, "-c", _SHARED_PROBE, str(path)]
    answer = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    return answer == "held"

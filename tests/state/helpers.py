"""Helpers for ledger tests: inventory rows and driving an item to a given state through the public API."""

from __future__ import annotations

from typing import Any

from state import Ledger

ENDPOINT = "https://upload.example.test/tus/SECRET-CAPABILITY-0123456789"


def row(key: str, number: int = 1, **fields: Any) -> dict[str, Any]:
    """An inventory row with a source and title derived from key."""
    base: dict[str, Any] = {
        "key": key,
        "row": number,
        "source": f"/videos/{key}.mp4",
        "title": f"Title {key}",
    }
    base.update(fields)
    return base


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
        ledger.plan([row(key, via=via, source_size=size)], run_id)
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

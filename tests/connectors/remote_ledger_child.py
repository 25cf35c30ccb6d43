"""A run holding a remote ledger for the kill -9 tests: it writes, syncs, writes more, waits to be killed.

    python -m tests.connectors.remote_ledger_child URL WORKDIR ENDPOINT LEASE SYNCED EXTRA

It prints one JSON line after the verified sync ({"synced": runs in S3 for sure, "pid", "litestream_pid"})
and one after the extra writes ({"written": runs committed locally}), then sleeps until killed.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from videoferry.connectors.ledger_lease import Holder
from videoferry.connectors.ledger_remote import RemoteLedger
from videoferry.connectors.s3 import S3Config
from videoferry.state import Ledger


def _prepare(path: Path) -> None:
    Ledger.open(path).close()


def _write_runs(ledger: Ledger, count: int) -> None:
    for _ in range(count):
        ledger.finish_run(ledger.start_run("migrate"), "succeeded")


def main(url: str, workdir: str, endpoint: str, lease: str, synced: str, extra: str) -> None:
    home = RemoteLedger.open(
        url,
        workdir,
        S3Config(endpoint_url=endpoint),
        holder=Holder.current(run="child-run"),
        prepare=_prepare,
        lease_seconds=float(lease),
    )
    ledger = Ledger.open(home.path)
    _write_runs(ledger, int(synced))
    home.sync()
    engine = home.litestream
    facts = {
        "synced": int(synced),
        "pid": os.getpid(),
        "litestream_pid": engine.pid,
        "control": str(engine.control_dir),
    }
    print(json.dumps(facts), flush=True)
    _write_runs(ledger, int(extra))
    print(json.dumps({"written": int(synced) + int(extra)}), flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main(*sys.argv[1:])

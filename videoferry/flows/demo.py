"""`videoferry demo`: the emulator in-process, a few dozen real clips, one migration through Prefect."""

from __future__ import annotations

import csv
import json
import os
import tempfile
import time
from pathlib import Path

import typer

#: Titles that do not fit a latin-1 header, so the demo shows them arriving exactly.
UNICODE_TITLES = ("Лекция №{n}: введение", "第{n}回 東京ライブ", "Café Łódź {n} 🎬", "Ελληνικά {n}")


def make_inventory(workdir: Path, items: int) -> Path:
    """Make `items` short real clips (1-3 s) and a CSV inventory naming them."""
    from videoferry.emulator.media import make_clip

    clips = workdir / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(1, items + 1):
        path = make_clip(clips / f"clip-{n:03d}.mp4", seconds=1.0 + n % 3, seed=n)
        title = UNICODE_TITLES[n % len(UNICODE_TITLES)].format(n=n) if n % 3 == 0 else f"Demo clip {n}"
        chapters = (
            json.dumps([{"time": 0, "title": "Start"}, {"time": 1, "title": "Глава 2"}]) if n % 4 == 0 else ""
        )
        tags = "demo;videoferry" if n % 5 == 0 else ""
        rows.append(
            {
                "source": str(path),
                "title": title,
                "description": f"clip {n}",
                "chapters": chapters,
                "tags": tags,
            }
        )
    inventory = workdir / "inventory.csv"
    with inventory.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["source", "title", "description", "chapters", "tags"])
        writer.writeheader()
        writer.writerows(rows)
    return inventory


def run_demo(items: int = 30, workdir: str | None = None, transfers: int = 4) -> int:
    """Run the whole demo; returns the migration's exit status."""
    from videoferry.emulator.server import EmulatorServer
    from videoferry.flows.ledger_report import summary_lines
    from videoferry.flows.migrate.options import MigrateOptions
    from videoferry.flows.warmup import ServerWarmup

    started = time.monotonic()
    # Prefect's temporary server starts now, on the other core, while the emulator starts and the clips are
    # made (a first run in a fresh .venv compiles Prefect's server for tens of seconds).
    prefect_server = ServerWarmup().start()
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="videoferry-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    typer.echo(f"demo: working in {root}")
    server = EmulatorServer(processing="timed", processing_seconds=2.0)
    server.start()
    try:
        ws = server.default
        os.environ["VIDEOFERRY_API_URL"] = server.base_url
        os.environ["VIDEOFERRY_UPLOAD_URL"] = server.upload_url
        os.environ["VIDEOFERRY_TOKEN"] = str(ws["token"])
        typer.echo(f"demo: emulator at {server.base_url} (uploads {server.upload_url}); making {items} clips")
        inventory = make_inventory(root, items)
        opts = MigrateOptions(
            inventory=str(inventory),
            parent_id=str(ws["project_id"]),
            ledger=str(root / "ledger.db"),
            transfers=transfers,
            report_dir=str(root / "report"),
        )
        typer.echo(
            "demo: migrating through the Prefect engine (a temporary local Prefect server starts first)"
        )
        from videoferry.flows.migrate.flow import run_flow

        prefect_server.join()
        outcome = run_flow(opts)
        for line in summary_lines(outcome.summary):
            typer.echo(line)
        for line in outcome.reasons:
            typer.echo(line)
        html = root / "report" / "report.html"
        typer.echo(f"report: {html}")
        typer.echo(f"ledger: {opts.ledger}  (try: videoferry status --ledger {opts.ledger})")
        typer.echo(
            "to point videoferry at an emulator yourself: run `videoferry emulator` and export "
            "VIDEOFERRY_API_URL, VIDEOFERRY_UPLOAD_URL and VIDEOFERRY_TOKEN from its first output line"
        )
        typer.echo(f"demo finished in {time.monotonic() - started:.0f} s")
        return outcome.exit_code
    finally:
        server.stop()

"""API calls per video to reach done, for tus (init counted) and for URL import, from the request log."""

from __future__ import annotations

from collections.abc import Iterator

from bench.figures import Figure
from bench.ratelog import api_calls, breakdown, refused
from bench.services import EmulatorProcess, FileServer
from bench.workload import BenchConfig, clip_bytes, settings_for, write_clips, write_inventory
from flows.options import MigrateOptions
from flows.runner import run_migration

#: Videos per mode; processing time per video and the poll interval (the spec's real minimum, 5 s).
FULL = {"videos": 100, "processing": 2.0, "poll": 5.0}
QUICK = {"videos": 5, "processing": 0.5, "poll": 1.0}
TRANSFERS = 4


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate N real clips by tus and N by URL import into fresh workspaces at the real limits (10/s and
    300/min); count the API calls each workspace received (preflight, creates, status lists, GETs) per video.
    """
    size = QUICK if cfg.quick else FULL
    videos = int(size["videos"])
    root = cfg.subdir("api-calls")
    files = root / "files"
    files.mkdir()
    data = clip_bytes()
    with EmulatorProcess(root) as emu, FileServer(files) as server:
        ctl = emu.ctl()
        for mode in ("tus", "url"):
            ws = ctl.create_workspace(processing="timed", processing_seconds=size["processing"])
            clips = write_clips(files / mode, videos, data)
            if mode == "tus":
                sources = [str(p) for p in clips]
            else:
                sources = [f"{server.url}/{mode}/{p.name}" for p in clips]
            inventory = write_inventory(root / f"{mode}.csv", sources)
            opts = MigrateOptions(
                inventory=str(inventory),
                parent_id=ws.project_id,
                ledger=str(root / f"{mode}.db"),
                transfers=TRANSFERS,
                poll_interval=size["poll"],
                wait_timeout=300.0,
            )
            outcome = run_migration(opts, settings_for(ws))
            entries = ctl.requests(ws.workspace_id)
            calls = api_calls(entries)
            complete = int(outcome.summary.get("complete", 0))
            yield Figure(
                f"api_calls_per_video_{mode}",
                len(calls) / videos,
                note=(
                    f"limit 1.0; {videos} videos, {complete} done; {breakdown(calls)}; "
                    f"{refused(entries)} 429s; poll {size['poll']:g} s, processing {size['processing']:g} s"
                ),
            )

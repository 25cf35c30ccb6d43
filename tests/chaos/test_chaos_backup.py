"""Chaos for `videoferry backup`: a library backed up under the service's variants, faults (downloads too) and
kill -9s, then a clean run: every object complete and verified, nothing complete downloaded twice."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.chaos.checks import rate_figures_of
from tests.chaos.harness import (
    FaultScript,
    chaos_seeds,
    describe_variants,
    draw_variants,
    journal_rows,
    run_and_kill,
)
from tests.flows.backup_fixtures import library_rows, media_gets
from tests.flows.helpers import cli_argv, cli_env, options, run_cli, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.connectors.inventory import read_inventory
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import run_migration
from videoferry.tasks.service import run_limiter

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(900)]

log = logging.getLogger(__name__)

#: Videos of a seed's library.
VIDEOS = 12
#: Variants out of a backup's draw: without originals the emulator's renditions have no download link, so
#: nothing could be backed up (that case has its own test: tests/flows/test_backup_crash.py).
NOT_DRAWN = frozenset({"no-original"})


def backup_seeds() -> list[int]:
    """The seeds to run: all of chaos_seeds() when VIDEOFERRY_CHAOS_SEEDS is set, else the first two (one
    to a directory, one to S3)."""
    import os

    seeds = chaos_seeds()
    return seeds if "VIDEOFERRY_CHAOS_SEEDS" in os.environ else seeds[:2]


def _faults(control: EmulatorControl, ws: Workspace, seed: int) -> FaultScript:
    """The seed's steady faults and bursts, and the downloads' own: 5xx, answers dropped, latency."""
    script = FaultScript(control, ws, seed)
    rng = random.Random(seed * 31 + 3)
    script.rules += [
        {"kind": "error", "status": 503, "path": "^/media/", "rate": rng.uniform(0.1, 0.25)},
        {"kind": "drop_after_commit", "method": "GET", "path": "^/media/", "rate": rng.uniform(0.05, 0.15)},
        {"kind": "latency", "ms": rng.choice((100, 300)), "path": "^/media/", "rate": 0.5},
    ]
    return script


def _library(tmp: Path, control: EmulatorControl, ws: Workspace, make: Any) -> dict[str, dict[str, Any]]:
    """VIDEOS clips migrated cleanly at the real limits; the videos as the emulator stores them."""
    inventory = write_inventory(tmp / "source.csv", library_rows(make, VIDEOS))
    outcome = run_migration(options(inventory, ws, tmp, ledger=str(tmp / "migrate.db")), settings_for(ws))
    assert outcome.exit_code == 0, outcome.reasons
    return {v["id"]: v for v in control.videos(ws)}


def _listed_all(ws: Workspace, count: int, ledger: Path) -> None:
    """Wait (bounded) until the list shows every video (the list-lag variant shows new ones late); its calls
    count against the migration's budget (the limiter file beside its ledger), so the two together keep to
    the limits the test checks even when the migration's last calls were a moment ago."""
    deadline = time.monotonic() + 30
    settings = settings_for(ws)
    with VideoClient.from_settings(settings, limiter=run_limiter(settings, str(ledger))) as client:
        while len(list(client.videos.scan(project_id=ws.project_id))) < count:
            assert time.monotonic() < deadline, "the list never showed every video"
            time.sleep(0.5)


class _Store:
    """The destination as the test reads it: complete video files and every object, by path under root."""

    def __init__(self, to: str, bucket: str | None) -> None:
        self.to, self.bucket = to, bucket or ""
        self.s3 = boto3.session.Session().client("s3", region_name="us-east-1") if bucket else None

    def objects(self) -> dict[str, bytes]:
        if self.s3 is None:
            root = Path(self.to)
            return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        found = {}
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix="chaos/"):
            for obj in page.get("Contents", []):
                body = self.s3.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"].read()
                found[obj["Key"].removeprefix("chaos/")] = body
        return found

    def complete(self) -> set[str]:
        """Ids of the videos whose file is complete (committed) in the destination."""
        return {p.split("/")[1] for p in self.objects() if p.endswith(".mp4")}

    def leftovers(self) -> list[str]:
        """Unfinished multipart uploads, or .part files."""
        if self.s3 is None:
            return [str(p) for p in Path(self.to).rglob("*.part")]
        return [u["Key"] for u in self.s3.list_multipart_uploads(Bucket=self.bucket).get("Uploads", [])]


@pytest.mark.parametrize("seed", backup_seeds())
def test_killed_backups_under_faults_then_a_clean_run_keep_every_object_once(
    seed: int, tmp_path: Path, chaos_ws: Workspace, chaos_control: EmulatorControl, clip_factory, request
) -> None:
    truth = _library(tmp_path, chaos_control, chaos_ws, clip_factory)
    variants, params = draw_variants(seed + 4000)
    variants = [v for v in variants if v not in NOT_DRAWN]
    chaos_control.set_variants(chaos_ws, variants, **params)
    _listed_all(chaos_ws, VIDEOS, tmp_path / "migrate.db")
    bucket = request.getfixturevalue("s3_bucket") if seed % 2 == 0 else None
    to = f"s3://{bucket}/chaos/" if bucket else str(tmp_path / "backup")
    store = _Store(to, bucket)
    ledger = tmp_path / "backup.db"
    args = ["backup", "--project", chaos_ws.project_id, "--to", to, "--ledger", str(ledger)]
    args += ["--no-prefect", "--transfers", "2"]
    env = cli_env(chaos_ws)
    rng = random.Random(seed * 97 + 1)
    endings: list[str] = []
    started = time.time()
    with _faults(chaos_control, chaos_ws, seed):
        for _ in range(3):
            complete, since = store.complete(), time.time()
            target = journal_rows(ledger, "op") + rng.randint(3, 40)
            endings.append(
                run_and_kill(cli_argv(*args), env, lambda: journal_rows(ledger, "op"), target, 20.0)
            )
            fetched = media_gets(chaos_control, chaos_ws, since=since)
            assert not set(fetched) & complete, "a complete file was downloaded again"
    complete, since = store.complete(), time.time()
    final = run_cli(args, env, timeout=600)
    assert final.returncode == 0, final.stdout[-3000:] + final.stderr[-3000:]
    assert not set(media_gets(chaos_control, chaos_ws, since=since)) & complete

    objects = store.objects()
    assert store.leftovers() == []
    for video_id, video in truth.items():
        body = objects[f"videos/{video_id}/{video_id}.mp4"]
        assert hashlib.md5(body).hexdigest() == video["md5"] and len(body) == video["file_size"]
        metadata = json.loads(objects[f"videos/{video_id}/metadata.json"])
        assert metadata["title"] == video["title"] and metadata["tags"] == video["tags"]
    manifest = json.loads(objects["manifest.json"])
    for obj in manifest["objects"]:
        assert hashlib.md5(objects[obj["path"]]).hexdigest() == obj["md5"], obj["path"]
    assert sorted(o["video_id"] for o in manifest["objects"] if o["kind"] == "video") == sorted(truth)
    (tmp_path / "inventory.csv").write_bytes(objects["inventory.csv"])
    inventory = read_inventory(str(tmp_path / "inventory.csv"), default_parent_id=chaos_ws.project_id)
    assert inventory.errors == [] and inventory.rows.height == VIDEOS
    again = run_cli(args, env, timeout=300)  # nothing left to do: no download, nothing rewritten
    assert again.returncode == 0 and f"videos: {VIDEOS} ({VIDEOS} unchanged)" in again.stdout, again.stdout
    for secret in (chaos_ws.token, "sig="):
        assert secret not in final.stdout + final.stderr + again.stdout + again.stderr
    # Downloads of signed links are not API calls (the service does not count them): left out.
    entries = [
        r for r in chaos_control.requests(chaos_ws.workspace_id) if not r["path"].startswith("/media/")
    ]
    figures = rate_figures_of(entries, uploads_counted="tus-rate-limited" in variants)
    log.warning(
        "chaos backup seed %d (%s, variants %s): %s, total %.1f s, %d counted requests, max %d/s, "
        "%d/min, %d 429",
        seed,
        "s3" if bucket else "dir",
        describe_variants(variants, params),
        endings,
        time.time() - started,
        figures.calls,
        figures.per_second,
        figures.per_minute,
        figures.refused_429,
    )
    figures.assert_inside_limits()

"""`--report s3://bucket/prefix/` for every job that takes it (migrate, apply, check, backup, archive): the
report's files are objects under the prefix, read back from moto's S3 server; nothing lands in a local folder
named `s3:`. Local reports are private: every file 0600, a folder the report made 0700."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import boto3

from tests.flows.helpers import cli_env, clip_rows, run_cli, write_inventory
from tests.flows.test_archive import broadcast_world
from videoferry.emulator.control import EmulatorControl, Workspace


def _reports(bucket: str, prefix: str) -> dict[str, bytes]:
    """name -> bytes of the objects under s3://bucket/prefix/."""
    client = boto3.session.Session().client("s3", region_name="us-east-1")
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            name = obj["Key"][len(prefix) :]
            out[name] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def _run(args: list[str], ws: Workspace, cwd: Path) -> None:
    done = run_cli(args, cli_env(ws), cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_job_writes_its_report_to_s3(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any, s3_bucket: str
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1))
    ledger = str(tmp_path / "ledger.db")
    report = f"s3://{s3_bucket}/reports"

    def vf(*args: str) -> None:
        _run(list(args), emu, tmp_path)

    parent = ("--parent-id", emu.project_id, "--ledger", ledger)
    vf("migrate", str(inventory), "--no-prefect", *parent, "--report", f"{report}/migrate/")
    (video,) = emu_control.videos(emu)
    vf("check", str(inventory), *parent, "--report", f"{report}/check/")
    ops = tmp_path / "ops.csv"
    ops.write_text(f"op,id,target,tags\nupdate,tag1,{video['id']},reported\n", encoding="utf-8")
    vf("apply", str(ops), "--no-prefect", "--ledger", ledger, "--report", f"{report}/apply/")
    world = broadcast_world(emu_control, emu, {"Keynote": 1})
    for job in ("backup", "archive"):
        copies = ("--project", emu.project_id, "--to", str(tmp_path / job), "--no-prefect")
        vf(job, *copies, "--ledger", str(tmp_path / f"{job}.db"), "--report", f"{report}/{job}/")

    assert not (tmp_path / "s3:").exists()  # no local folder named after the URL's scheme
    recording = world.videos[0]
    for job, names in {
        "migrate": "json",
        "check": "json",
        "apply": "json",
        "backup": "backup.json",
        "archive": "json",
    }.items():
        files = _reports(s3_bucket, f"reports/{job}/")
        assert files and all(size for size in map(len, files.values())), (job, list(files))
        documents = [name for name in files if name.endswith(names)]
        assert documents, (job, list(files))
        text = b"".join(files[name] for name in documents).decode()
        json.loads(files[documents[0]])
        expected = recording if job == "archive" else video["id"]
        assert expected in text, (job, text[:500])


def test_a_local_report_is_private(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    """Reports hold titles, sources and messages: each file 0600, the folder the run made 0700."""
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1))
    out = tmp_path / "out" / "reports"
    ledger = str(tmp_path / "ledger.db")
    args = ["migrate", str(inventory), "--no-prefect", "--parent-id", emu.project_id, "--ledger", ledger]
    _run([*args, "--report", str(out)], emu, tmp_path)
    files = sorted(out.iterdir())
    assert {p.suffix for p in files} >= {".csv", ".parquet", ".json", ".html"}, files
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {"0o600"}, modes

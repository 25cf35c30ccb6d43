"""`videoferry migrate` straight out of the Vimeo and Wistia stand-ins (real loopback servers) into the
emulator: an inventory of `vimeo:<id>` rows, the `vimeo:` / `wistia:` sources, reruns by the source's id,
and the faults of a source (a video deleted before its create, a link expired, a platform gone)."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator.control import EmulatorControl, Workspace
from emulator.platforms.server import Standin, StandinControl
from tests.fixtures.platforms import platform_env
from tests.flows.helpers import cli_env, run_cli, write_inventory

Fixture = tuple[Standin, StandinControl]


def _clip(make: Callable[..., Path], name: str) -> str:
    return base64.b64encode(make(1.0, name=name).read_bytes()).decode()


def _rendition(make: Callable[..., Path], name: str, quality: str = "source") -> dict[str, Any]:
    kind = "source" if quality == "source" else "video/mp4"
    return {
        "quality": quality,
        "rendition": quality,
        "type": kind,
        "width": 160,
        "height": 120,
        "content_b64": _clip(make, name),
    }


def _migrate(ws: Workspace, env: dict[str, str], source: str, tmp: Path, *extra: str) -> Any:
    args = [
        "migrate",
        source,
        "--parent-id",
        ws.project_id,
        "--ledger",
        str(tmp / "ledger.db"),
        "--wait-timeout",
        "60",
        "--transfers",
        "2",
        *extra,
    ]
    return run_cli(args, {**cli_env(ws), **env}, cwd=tmp)


def test_inventory_of_vimeo_ids_migrates_by_url_import(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, vimeo_standin: Fixture, clip_factory
) -> None:
    standin, control = vimeo_standin
    control.seed(
        videos=[
            {
                "id": "11",
                "name": "Keynote",
                "tags": ["conf"],
                "renditions": [_rendition(clip_factory, "a.mp4")],
            },
            {"id": "12", "name": "Panel", "renditions": [_rendition(clip_factory, "b.mp4", "720p")]},
        ]
    )
    inventory = write_inventory(
        tmp_path / "inv.csv",
        [
            {"source": "vimeo:11", "key": "vimeo:11", "title": "Keynote", "tags": "conf"},
            {"source": "vimeo:12", "key": "vimeo:12", "title": "Panel"},
        ],
    )
    done = _migrate(emu, platform_env(standin), str(inventory), tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    videos = emu_control.videos(emu)
    assert sorted(v["title"] for v in videos) == ["Keynote", "Panel"]
    assert all(v["status"] == "done" for v in videos)
    keys = {row[0] for row in sqlite3.connect(tmp_path / "ledger.db").execute("select key from items")}
    assert keys == {"vimeo:11", "vimeo:12"}
    assert standin.token not in done.stdout + done.stderr
    assert "sig=" not in done.stdout + done.stderr

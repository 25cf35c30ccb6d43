"""videoferry check at its edges: hashed downloads, capped pages, configuration errors (exit 2)."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flows.helpers import api_calls, cli_env, clip_rows, options, settings_for, write_inventory
from videoferry.connectors.client import VideoClient
from videoferry.connectors.inventory import read_inventory
from videoferry.connectors.models import Video
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.check.options import CheckOptions
from videoferry.flows.check.runner import run_check
from videoferry.flows.migrate.runner import run_migration
from videoferry.tasks.check.items import CheckSettings, check_items
from videoferry.tasks.check.listing import Listing


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        """No access log on the test's stderr."""


@pytest.fixture()
def files(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A loopback HTTP server of a folder (the service's download host stand-in): its base URL and folder."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def _video(video_id: str, title: str, parent: str, size: int, link: str) -> Video:
    """A video as a service without md5 answers it: an original with a size and a signed download link."""
    original = {"quality": "original", "file_size": size, "md5": None, "download_link": link}
    return Video.model_validate(
        {"id": video_id, "project_id": parent, "title": title, "status": "done", "assets": [original]}
    )


def test_download_md5_hashes_the_original_when_the_service_gives_none(
    tmp_path: Path, emu: Workspace, clip_factory, files: tuple[str, Path]
) -> None:
    base, folder = files
    rows = clip_rows(clip_factory, 3, metadata=False)
    specs = list(
        read_inventory(
            str(write_inventory(tmp_path / "inv.csv", rows)), default_parent_id=emu.project_id
        ).specs()
    )
    shutil.copy(rows[0]["source"], folder / "same.mp4")
    shutil.copy(rows[2]["source"], folder / "other.mp4")  # another clip's bytes, padded to the first's size
    size = Path(rows[1]["source"]).stat().st_size
    with (folder / "other.mp4").open("r+b") as handle:
        handle.truncate(size)
    ids = ["00000000-0000-4000-8000-00000000000" + str(n) for n in range(3)]
    links = [f"{base}/same.mp4?sig=SECRET1", f"{base}/other.mp4?sig=SECRET2", f"{base}/gone.mp4?sig=SECRET3"]
    sizes = [Path(rows[0]["source"]).stat().st_size, size, Path(rows[2]["source"]).stat().st_size]
    videos = [_video(ids[n], specs[n].title, emu.project_id, sizes[n], links[n]) for n in range(3)]
    dest = Listing({v.id: v for v in videos}, {emu.project_id: [v.id for v in videos]})
    with VideoClient.from_settings(settings_for(emu)) as client:
        without = check_items(client, specs, dest, {}, {}, CheckSettings())
        hashed = check_items(client, specs, dest, {}, {}, CheckSettings(download_md5=True))
    assert [(line.mark.value, line.bytes_by) for line in without.items] == [("=", "size")] * 3
    assert [(line.mark.value, line.bytes_by, line.fields) for line in hashed.items] == [
        ("=", "download-md5", ()),
        ("*", "download-md5", ("md5",)),
        ("!", "size", ()),
    ]
    assert "download not hashed: ResponseFormatError 404" in hashed.items[2].note
    assert not any("SECRET" in line.text() or base in line.text() for line in hashed.items)


def test_capped_pages_without_total_are_listed_to_the_end(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    emu_control.set_variants(emu, ["page-cap-10", "no-total", "ids-undashed"])
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 12, metadata=False))
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    mark = time.time()
    outcome = run_check(
        CheckOptions(str(inventory), ledger=str(tmp_path / "none.db"), parent_id=emu.project_id),
        settings_for(emu),
    )
    assert [line.mark.value for line in outcome.lines] == ["="] * 12, [line.text() for line in outcome.lines]
    lists = [c for c in api_calls(emu_control, emu, since=mark) if c["path"] == "/v1/videos"]
    assert len(lists) == 2  # pages of 10 (the server's cap), the second one short: the end


def _videoferry(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", "from videoferry.flows.cli import main; main()", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_configuration_to_fix_exits_2_without_the_token(tmp_path: Path, emu: Workspace, clip_factory) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    args = ["check", str(inventory), "--parent-id", emu.project_id, "--ledger", str(tmp_path / "l.db")]
    wrong = "wrong-token-0123456789abcdef"
    refused = _videoferry(args, cli_env(emu, VIDEOFERRY_TOKEN=wrong))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "VIDEOFERRY_TOKEN" in refused.stderr
    assert wrong not in refused.stdout + refused.stderr
    unreadable = _videoferry(["check", str(tmp_path / "missing.csv")], cli_env(emu))
    assert unreadable.returncode == 2 and "missing.csv" in unreadable.stderr
    assert emu.token not in unreadable.stdout + unreadable.stderr
    env = cli_env(emu)
    del env["VIDEOFERRY_TOKEN"]
    unset = _videoferry(args, env)
    assert unset.returncode == 2 and "VIDEOFERRY_TOKEN" in unset.stderr


def test_a_failing_listing_exits_1_and_an_unreadable_video_is_not_checked(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2))  # row 0 has tags: a GET
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    emu_control.set_faults(
        emu, [{"kind": "error", "status": 403, "method": "GET", "path": "^/v1/videos/[^/]+$"}]
    )
    opts = CheckOptions(str(inventory), ledger=str(tmp_path / "ledger.db"), parent_id=emu.project_id)
    outcome = run_check(opts, settings_for(emu))
    assert [line.mark.value for line in outcome.lines] == ["!", "="]
    assert "could not be read" in outcome.lines[0].note and outcome.exit_code == 1
    emu_control.set_faults(emu, [{"kind": "error", "status": 400, "method": "GET", "path": "^/v1/videos$"}])
    args = ["check", str(inventory), "--parent-id", emu.project_id, "--ledger", str(tmp_path / "ledger.db")]
    failed = _videoferry(args, cli_env(emu))
    assert failed.returncode == 1 and "could not be listed" in failed.stderr, failed.stderr
    assert emu.token not in failed.stdout + failed.stderr


def test_url_sources_are_compared_without_their_bytes(
    tmp_path: Path, emu: Workspace, clip_factory, files: tuple[str, Path]
) -> None:
    base, folder = files
    clips = [clip_factory(1.0, name=f"u{n}.mp4") for n in range(2)]
    for clip in clips:
        shutil.copy(clip, folder / clip.name)
    rows = [
        {"source": f"{base}/{c.name}?sig=SECRET", "title": f"From a URL {n}"} for n, c in enumerate(clips)
    ]
    inventory = write_inventory(tmp_path / "inv.csv", rows)
    assert run_migration(options(inventory, emu, tmp_path), settings_for(emu)).exit_code == 0
    opts = CheckOptions(str(inventory), ledger=str(tmp_path / "ledger.db"), parent_id=emu.project_id)
    outcome = run_check(opts, settings_for(emu))
    assert [(line.mark.value, line.bytes_by) for line in outcome.lines] == [("=", "")] * 2
    assert all("http(s) sources are not read" in line.note for line in outcome.lines)
    assert outcome.exit_code == 0
    assert not any("SECRET" in line.text() for line in outcome.lines)

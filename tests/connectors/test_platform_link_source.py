"""The bytes of a platform video read through its download link (the Vimeo stand-in, a real server): ranges
as a tus upload asks them, and a link that expired meanwhile resolved again, once."""

from __future__ import annotations

import base64

from tests.fixtures.platforms import platform_env
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.platforms.links import PlatformLinks
from videoferry.connectors.tus import TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.emulator.platforms.server import Standin, StandinControl

Fixture = tuple[Standin, StandinControl]
FILE = bytes(range(256)) * 40  # 10,240 bytes
B64 = base64.b64encode(FILE).decode()


def test_ranges_are_read_and_an_expired_link_is_resolved_again(vimeo_standin: Fixture) -> None:
    standin, control = vimeo_standin
    rendition = {
        "quality": "source",
        "rendition": "source",
        "type": "source",
        "width": 160,
        "height": 120,
        "content_b64": base64.b64encode(FILE).decode(),
    }
    control.seed(videos=[{"id": "5", "name": "Five", "renditions": [rendition]}])
    links = PlatformLinks(platform_env(standin))
    try:
        source = links.open_file("vimeo:5")
        assert source.size == len(FILE)
        assert source.read_range(0, 4096) == FILE[:4096]
        assert source.read_range(4096, 2048) == FILE[4096:6144]  # read on from the same answer
        control.configure(expire_links=True)  # the link handed out above answers 410 from now on
        assert source.read_range(2048, 10_000) == FILE[2048:]  # a seek: a new GET, to the end: 8,192 bytes
        assert source.resolved == 2
        assert source.read_range(len(FILE), 10) == b""
        downloads = [r["status"] for r in control.log() if r["path"].startswith("/_download/")]
        assert downloads == [302, 410, 302]
    finally:
        links.close()


def test_a_file_host_that_ignores_range_is_read_once_by_a_tus_upload(
    vimeo_standin: Fixture, emu: Workspace, emu_control: EmulatorControl
) -> None:
    standin, control = vimeo_standin
    rendition = {"quality": "source", "rendition": "source", "type": "source", "width": 160, "height": 120}
    control.seed(videos=[{"id": "6", "name": "Six", "renditions": [rendition | {"content_b64": B64}]}])
    links = PlatformLinks(platform_env(standin))
    limiter = ApiRateLimiter.memory()
    try:
        source = links.open_file("vimeo:6")
        with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter) as client:
            session = client.uploads.create_video(parent_id=emu.project_id, title="Six", filesize=source.size)
        with TusUpload(chunk_size=1024) as tus:  # ten chunks
            assert tus.upload(session.endpoint, source, fresh_filesize=source.size) == len(FILE)
        # The CDN answers every GET with the whole file (200): one GET, read on from chunk to chunk, not
        # the file downloaded again (and cut short) for each chunk.
        downloads = [r["status"] for r in control.log() if r["path"].startswith("/_download/")]
        assert downloads == [302]
        assert [v.get("file_size") for v in emu_control.videos(emu)] == [len(FILE)]
    finally:
        limiter.close()
        links.close()

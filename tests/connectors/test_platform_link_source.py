"""The bytes of a platform video read through its download link (the Vimeo stand-in, a real server): ranges
as a tus upload asks them, and a link that expired meanwhile resolved again, once."""

from __future__ import annotations

import base64

from tests.fixtures.platforms import platform_env
from videoferry.connectors.platforms.links import PlatformLinks
from videoferry.emulator.platforms.server import Standin, StandinControl

Fixture = tuple[Standin, StandinControl]
FILE = bytes(range(256)) * 40  # 10,240 bytes


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
        control.configure(expire_links=True)  # the link handed out above answers 410 from now on
        assert source.read_range(4096, 8192) == FILE[4096:]  # to the end: 6,144 bytes
        assert source.resolved == 2
        assert source.read_range(len(FILE), 10) == b""
        downloads = [r["status"] for r in control.log() if r["path"].startswith("/_download/")]
        assert downloads == [302, 410, 302]
    finally:
        links.close()

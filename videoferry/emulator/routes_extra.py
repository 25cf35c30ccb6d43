"""The route tables of DRM, privacy domains, live events, restreams, unique codes, QoS and chat."""

from __future__ import annotations

from videoferry.emulator.app import Route
from videoferry.emulator.broadcast import poster_routes
from videoferry.emulator.codes import codes_routes
from videoferry.emulator.drm import drm_routes
from videoferry.emulator.media_links import media_routes
from videoferry.emulator.privacy import privacy_routes
from videoferry.emulator.qos_chat import qos_chat_routes
from videoferry.emulator.routes_live import live_routes


def extra_api_routes() -> list[Route]:
    """Routes of 4.3 to 4.7 on the API host, and the download links of originals."""
    live = live_routes() + codes_routes() + qos_chat_routes()
    return drm_routes() + privacy_routes() + live + media_routes()


def extra_upload_routes() -> list[Route]:
    """/v2/poster on the upload host."""
    return poster_routes()

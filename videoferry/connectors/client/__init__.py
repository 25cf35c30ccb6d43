"""The video API client: `VideoClient`, one resource per endpoint group over one `Transport`."""

from videoferry.connectors.client.transport import Transport
from videoferry.connectors.client.video_client import VideoClient

__all__ = ["Transport", "VideoClient"]

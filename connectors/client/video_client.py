"""VideoClient: one object over one Transport, with one resource attribute per endpoint group."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Self

import httpx

from connectors.client.transport import Transport
from connectors.client.uploads import Uploads
from connectors.client.videos import Videos
from connectors.clock import ServiceClock
from connectors.config import Settings
from connectors.limiter import ApiRateLimiter, rate_limiter
from connectors.retry import RetryPolicy

if TYPE_CHECKING:
    from connectors.client.drm import Drm
    from connectors.client.live_events import LiveEvents
    from connectors.client.posters import Posters
    from connectors.client.privacy_domains import PrivacyDomains
    from connectors.client.restreams import Restreams
    from connectors.client.unique_codes import UniqueCodes

__all__ = ["VideoClient"]


class VideoClient:
    """Typed client for the service: `client.videos.get(...)`, `client.uploads.create_video(...)` and so on.

    Every request of every resource goes through `client.transport` (connectors/client/transport.py):
    each attempt passes the shared rate limiter and feeds `clock`, retries follow the call kind, methods
    the spec does not show are learned from a 405 (`methods()`). Thread-safe.
    """

    def __init__(
        self,
        api_url: str,
        upload_url: str,
        token: str,
        *,
        limiter: ApiRateLimiter | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        max_connections: int = 32,
        auth_scheme: str | None = "Bearer",
        http_transport: httpx.BaseTransport | None = None,
        outage: float | None = None,
    ) -> None:
        #: The one place requests are built and sent; its limiter and HTTP settings serve tus too.
        self.transport = Transport(
            api_url,
            upload_url,
            token,
            limiter=limiter,
            timeout=timeout,
            retry=retry,
            max_connections=max_connections,
            auth_scheme=auth_scheme,
            http_transport=http_transport,
            outage=outage,
        )
        self.videos = Videos(self.transport)
        self.uploads = Uploads(self.transport)

    # DRM, privacy domains, live events and their restreams, unique codes and posters (4.3-4.7): made, and
    # their modules imported, on first use (their models cost a migration's start 0.1-0.2 s it never uses).

    @cached_property
    def drm(self) -> Drm:
        from connectors.client.drm import Drm

        return Drm(self.transport)

    @cached_property
    def privacy_domains(self) -> PrivacyDomains:
        from connectors.client.privacy_domains import PrivacyDomains

        return PrivacyDomains(self.transport)

    @cached_property
    def live_events(self) -> LiveEvents:
        from connectors.client.live_events import LiveEvents

        return LiveEvents(self.transport)

    @cached_property
    def restreams(self) -> Restreams:
        from connectors.client.restreams import Restreams

        return Restreams(self.transport)

    @cached_property
    def unique_codes(self) -> UniqueCodes:
        from connectors.client.unique_codes import UniqueCodes

        return UniqueCodes(self.transport)

    @cached_property
    def posters(self) -> Posters:
        from connectors.client.posters import Posters

        return Posters(self.transport)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        limiter: ApiRateLimiter | None = None,
        retry: RetryPolicy | None = None,
        outage: float | None = None,
    ) -> VideoClient:
        """A client for the configured service; without `limiter`, rate_limiter() for the settings; `outage`:
        the bound on a service that answers nothing (Transport.silence)."""
        if limiter is None:
            limiter = rate_limiter(
                settings.token,
                url=settings.limiter_url,
                per_second=settings.rate_per_second,
                per_minute=settings.rate_per_minute,
            )
        return cls(
            settings.api_url,
            settings.upload_url,
            settings.token,
            limiter=limiter,
            timeout=settings.timeout,
            retry=retry,
            outage=outage,
        )

    @property
    def clock(self) -> ServiceClock:
        """The service's clock, learned from the Date header of every answer."""
        return self.transport.clock

    def methods(self) -> dict[str, str]:
        """operation -> HTTP method in use, for the operations whose method the spec does not show."""
        return self.transport.methods()

    def close(self) -> None:
        """Close both connection pools (the limiter is shared and stays open)."""
        self.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"VideoClient(api_url={self.transport.api_url!r}, upload_url={self.transport.upload_url!r})"

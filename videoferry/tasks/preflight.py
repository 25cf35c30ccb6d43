"""The preflight checks: the service's addresses answer, with its routes under them (no token sent), and one
cheap list call that stops a run with a bad token before its ledger is touched."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time

from videoferry.connectors.client import VideoClient
from videoferry.connectors.client.probe import ProbeAnswer, ServiceRouteError, probe_service, route_missing
from videoferry.connectors.config import Settings
from videoferry.connectors.errors import AuthError, VideoApiError
from videoferry.core.redact import safe_uri

log = logging.getLogger(__name__)

#: A check this recent (seconds) by this process for the same service and token stands for the run's own.
RECENT_SECONDS = 60.0

_passed: dict[str, float] = {}
_reached: dict[tuple[str, str], float] = {}
_lock = threading.Lock()


def check_reachable(settings: Settings) -> None:
    """Both addresses of the service answer HTTP with the service's routes (connectors/client/probe.py: one
    GET each, no token, a few seconds at most); ServiceAddressError (a ConfigError, exit status 2) names the
    URL, what is wrong and the variable to fix. A pass by this process within RECENT_SECONDS for the same
    addresses stands for a new check (the command line checks before a Prefect flow starts; the flow's run
    checks again, for deployments)."""
    addresses = (settings.api_url, settings.upload_url)
    with _lock:
        at = _reached.get(addresses)
    if at is not None and time.monotonic() - at < RECENT_SECONDS:
        return
    probe_service(settings)
    with _lock:
        _reached[addresses] = time.monotonic()


def _key(api_url: str, token: str) -> str:
    # Only a digest of the token is kept (secrets never sit in plain module state that could be dumped).
    return hashlib.sha256(f"{api_url}\n{token}".encode()).hexdigest()


def read_one(client: VideoClient) -> None:
    """The preflight read: list one video; AuthError (and any other VideoApiError) propagates, but a 404 is
    a ServiceRouteError naming the API address (a list is never "missing": its route is not there)."""
    try:
        client.videos.list(page=1, per_page=1)
    except VideoApiError as exc:
        if exc.status != 404:
            raise
        raise ServiceRouteError([_misrouted(client.transport.api_url)]) from None


def _misrouted(api_url: str) -> ProbeAnswer:
    what, setting, route = "API", "VIDEOFERRY_API_URL / --api-url", "/v1/videos"
    failure = route_missing(what, api_url, route, setting)
    return ProbeAnswer(what, safe_uri(api_url), setting, 404, failure=failure)


def check_token(settings: Settings, ledger: str | os.PathLike[str]) -> None:
    """The token check of a run, before its ledger is touched: read_one() with a client counted by the run's
    rate limiter (tasks/service.run_client); none when this process passed it a moment ago (the CLI checks
    while Prefect's server starts). A refused token (AuthError: exit status 2) and a wrong API address
    (ServiceRouteError: exit status 2) propagate; any other failure is logged and the run goes on (its own
    calls retry and say what they find)."""
    if checked_recently(settings):
        return
    from videoferry.tasks.service import run_client

    with run_client(settings, ledger) as client:
        try:
            check_service(client, settings)
        except AuthError:
            raise
        except VideoApiError as exc:
            log.warning("preflight list failed (%s); going on", exc.code or exc.status)


def check_service(client: VideoClient, settings: Settings) -> None:
    """read_one(); a pass is remembered for checked_recently() (the CLI's check while Prefect starts)."""
    read_one(client)
    with _lock:
        _passed[_key(settings.api_url, settings.token)] = time.monotonic()


def checked_recently(settings: Settings) -> bool:
    """Whether this process passed the check for this service and token within RECENT_SECONDS."""
    with _lock:
        at = _passed.get(_key(settings.api_url, settings.token))
    return at is not None and time.monotonic() - at < RECENT_SECONDS

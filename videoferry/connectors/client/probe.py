"""A quick check of the configured addresses before anything is sent: do the API and upload hosts answer, and
do the service's routes exist under them?"""

from __future__ import annotations

import concurrent.futures
import re
import time
from dataclasses import dataclass

import httpx

from videoferry.connectors.client.network import describe_network_failure
from videoferry.connectors.config import ConfigError, Settings
from videoferry.connectors.tls import tls_context
from videoferry.core.redact import safe_uri

__all__ = [
    "DEFAULT_PROBE_TIMEOUT",
    "ProbeAnswer",
    "ServiceAddressError",
    "ServiceRouteError",
    "ServiceUnreachableError",
    "probe_service",
    "route_missing",
]

#: Seconds each address has to answer (connect and first byte); both are tried at once.
DEFAULT_PROBE_TIMEOUT = 3.0

#: (what, setting to fix, the route probed) of each address, in the order they are reported. The routes are
#: the spec's (section 4): GET {base_url}/v1/videos without a token is 400 / 100101 (Authorization missing)
#: where the route exists; GET {upload_url}/v2/init is 405 (the route takes POST) or 400 / 401. Either way
#: only a route that is not there answers 404.
_ADDRESSES = {
    "api_url": ("API", "VIDEOFERRY_API_URL / --api-url", "/v1/videos"),
    "upload_url": ("upload", "VIDEOFERRY_UPLOAD_URL / --upload-url", "/v2/init"),
}

#: A version segment at the end of a configured address (the spec writes every path from /v1 or /v2 on).
_VERSION_TAIL = re.compile(r"/(v\d+)$")


class ServiceAddressError(ConfigError):
    """A configured address of the service is wrong: a configuration error (exit 2), one clause per address
    naming the URL, what is wrong and the variable and option to fix."""

    def __init__(self, answers: list[ProbeAnswer]) -> None:
        self.answers = answers
        super().__init__("; ".join(a.failure for a in answers if a.failure is not None))


class ServiceUnreachableError(ServiceAddressError):
    """An address of the service does not answer at all (refused, no such host, TLS, no answer in time)."""


class ServiceRouteError(ServiceAddressError):
    """An address answers, but the service's routes are not under it (404): a path appended to the base URL,
    or another server."""


@dataclass(frozen=True)
class ProbeAnswer:
    """What one address did: an HTTP status, and what is wrong with the address in words (None: nothing)."""

    what: str
    url: str
    setting: str
    status: int | None = None
    failure: str | None = None
    reached: bool = True  #: whether it answered HTTP at all


def route_missing(what: str, url: str, route: str, setting: str) -> str:
    """The clause for an address under which the service's `route` is not found (404), with the fix: the
    base URL without the version segment when the address ends with one (the spec writes paths from /v1
    on, so /v1 is the natural thing to append by mistake)."""
    shown = safe_uri(url)
    tail = _VERSION_TAIL.search(httpx.URL(url).path.rstrip("/"))
    if tail is not None:
        fix = f"give the base URL, without /{tail.group(1)} ({shown.removesuffix('/' + tail.group(1))})"
    else:
        fix = f"give the service's base URL, the one the spec's {route} goes under"
    return f"the {what} address {shown} has no route {route} (404 for {shown}{route}): {fix}; check {setting}"


def _probe_one(
    what: str, url: str, setting: str, route: str, timeout: float, transport: httpx.BaseTransport | None
) -> ProbeAnswer:
    shown = safe_uri(url)
    # No token: the check must not hand the credential to an address that may be a typo.
    with httpx.Client(
        timeout=timeout, transport=transport, follow_redirects=False, verify=tls_context()
    ) as http:
        try:
            response = http.get(url + route)
        except httpx.TransportError as exc:
            _kind, words = describe_network_failure(exc, url, timeout=timeout)
            failure = f"the {what} address {shown} does not answer: {words}; check {setting}"
            return ProbeAnswer(what, shown, setting, failure=failure, reached=False)
    status = response.status_code
    if status == 404:
        return ProbeAnswer(what, shown, setting, status, failure=route_missing(what, url, route, setting))
    return ProbeAnswer(what, shown, setting, status)


def probe_service(
    settings: Settings,
    *,
    timeout: float = DEFAULT_PROBE_TIMEOUT,
    transport: httpx.BaseTransport | None = None,
) -> list[ProbeAnswer]:
    """Check within about `timeout` seconds that the API and the upload address both answer HTTP, with the
    service's routes under them.

    Sends one unauthenticated GET to each address's route (GET {api_url}/v1/videos, GET
    {upload_url}/v2/init), in parallel, outside the rate limiter (it carries no token). Any answer but 404
    counts (400 for the missing token, 401, 405, 5xx: the route is there); a 404 says the route is not
    (ServiceRouteError: e.g. "/v1" appended to the base URL); connection refused, a name that does not
    resolve, TLS failure or no answer in time say the host is not (ServiceUnreachableError, when any
    address is so). Both are ConfigErrors (exit 2) naming each wrong URL and the variable and option to fix.
    Returns both answers. A DNS lookup that hangs is bounded too: an address not settled by `timeout` + 1 s
    counts as not answering.
    """
    urls = {name: getattr(settings, name) for name in _ADDRESSES}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(urls), thread_name_prefix="probe")
    try:
        futures = {}
        for name, url in urls.items():
            what, setting, route = _ADDRESSES[name]
            futures[name] = pool.submit(_probe_one, what, url, setting, route, timeout, transport)
        deadline = time.monotonic() + timeout + 1.0
        answers: list[ProbeAnswer] = []
        for name, future in futures.items():
            what, setting, _route = _ADDRESSES[name]
            try:
                answers.append(future.result(timeout=max(deadline - time.monotonic(), 0.0)))
            except concurrent.futures.TimeoutError:
                shown = safe_uri(urls[name])
                failure = f"the {what} address {shown} does not answer: no answer within {timeout:g} s"
                failure += f"; check {setting}"
                answers.append(ProbeAnswer(what, shown, setting, failure=failure, reached=False))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if any(not a.reached for a in answers):
        raise ServiceUnreachableError(answers)
    if any(a.failure is not None for a in answers):
        raise ServiceRouteError(answers)
    return answers

"""A quick connectivity check before the first create: do the API and upload addresses answer at all?"""

from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass

import httpx

from connectors.client.network import describe_network_failure
from connectors.config import ConfigError, Settings
from connectors.tls import tls_context
from core.redact import safe_uri

__all__ = ["DEFAULT_PROBE_TIMEOUT", "ProbeAnswer", "ServiceUnreachableError", "probe_service"]

#: Seconds each address has to answer (connect and first byte); both are tried at once.
DEFAULT_PROBE_TIMEOUT = 3.0

#: (what, setting to fix) of each address, in the order they are reported.
_ADDRESSES = {
    "api_url": ("API", "VIDEOFERRY_API_URL / --api-url"),
    "upload_url": ("upload", "VIDEOFERRY_UPLOAD_URL / --upload-url"),
}


class ServiceUnreachableError(ConfigError):
    """An address of the service does not answer: a configuration error (exit 2) naming URL and setting."""

    def __init__(self, answers: list[ProbeAnswer]) -> None:
        self.answers = answers
        lines = [
            f"the {a.what} address {a.url} does not answer: {a.failure}; check {a.setting}"
            for a in answers
            if a.failure is not None
        ]
        super().__init__("; ".join(lines))


@dataclass(frozen=True)
class ProbeAnswer:
    """What one address did: an HTTP status (any status: it answers), or the failure in words."""

    what: str
    url: str
    setting: str
    status: int | None = None
    failure: str | None = None


def _probe_one(
    what: str, url: str, setting: str, timeout: float, transport: httpx.BaseTransport | None
) -> ProbeAnswer:
    shown = safe_uri(url)
    # No token: the check must not hand the credential to an address that may be a typo.
    with httpx.Client(
        timeout=timeout, transport=transport, follow_redirects=False, verify=tls_context()
    ) as http:
        try:
            response = http.get(url)
        except httpx.TransportError as exc:
            _kind, words = describe_network_failure(exc, url, timeout=timeout)
            return ProbeAnswer(what, shown, setting, failure=words)
    return ProbeAnswer(what, shown, setting, status=response.status_code)


def probe_service(
    settings: Settings,
    *,
    timeout: float = DEFAULT_PROBE_TIMEOUT,
    transport: httpx.BaseTransport | None = None,
) -> list[ProbeAnswer]:
    """Check within about `timeout` seconds that the API and the upload address both answer HTTP.

    Any HTTP answer counts (401, 404 and 5xx too: something is there); connection refused, a name that does
    not resolve, TLS failure or no answer in time do not. Sends one unauthenticated GET to each base URL, in
    parallel, outside the rate limiter (it carries no token). Returns both answers; raises
    ServiceUnreachableError (a ConfigError: exit 2) naming each URL that does not answer and the variable
    and option to fix. A DNS lookup that hangs is bounded too: an address not settled by `timeout` + 1 s
    counts as not answering.
    """
    urls = {name: getattr(settings, name) for name in _ADDRESSES}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(urls), thread_name_prefix="probe")
    try:
        futures = {
            name: pool.submit(_probe_one, _ADDRESSES[name][0], url, _ADDRESSES[name][1], timeout, transport)
            for name, url in urls.items()
        }
        deadline = time.monotonic() + timeout + 1.0
        answers: list[ProbeAnswer] = []
        for name, future in futures.items():
            what, setting = _ADDRESSES[name]
            try:
                answers.append(future.result(timeout=max(deadline - time.monotonic(), 0.0)))
            except concurrent.futures.TimeoutError:
                failure = f"no answer within {timeout:g} s"
                answers.append(ProbeAnswer(what, safe_uri(urls[name]), setting, failure=failure))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if any(a.failure is not None for a in answers):
        raise ServiceUnreachableError(answers)
    return answers

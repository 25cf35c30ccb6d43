"""Network failures in plain words: which host and port, and what failed (refused, DNS, timeout, TLS)."""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator
from typing import Literal

import httpx

__all__ = ["NetworkFailure", "describe_network_failure", "host_of"]

#: What failed: the kind of a TransportError (its message says it in words).
NetworkFailure = Literal["refused", "dns", "timeout", "tls", "reset", "unreachable", "network"]

_DNS_WORDS = (
    "name or service not known",
    "nodename nor servname",
    "name resolution",
    "no address associated",
)


def host_of(url: httpx.URL | str) -> str:
    """``host:port`` of a URL (its scheme's default port when none is written); never its path or query."""
    parsed = httpx.URL(url) if isinstance(url, str) else url
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = parsed.host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def describe_network_failure(
    exc: httpx.TransportError, url: httpx.URL | str | None = None, *, timeout: float | None = None
) -> tuple[NetworkFailure, str]:
    """(kind, plain words) of a failure that left no HTTP answer, naming the host and port only.

    ``connection refused by 127.0.0.1:9``, ``cannot resolve host apii.example.com``, ``no answer from
    api.example.com:443 within 30 s``, ``TLS handshake with api.example.com:443 failed (certificate verify
    failed)``. `url` defaults to the failed request's; `timeout` (seconds) is named in timeout messages.
    """
    if url is None:
        try:
            url = exc.request.url
        except RuntimeError:  # an exception raised without its request
            url = None
    where = host_of(url) if url is not None else "the service"
    host = where.rpartition(":")[0] if url is not None else "the service"
    within = f" within {timeout:g} s" if timeout else ""
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return "dns", f"cannot resolve host {host}"
        if isinstance(cause, ConnectionRefusedError):
            return "refused", f"connection refused by {where}"
        if isinstance(cause, ssl.SSLError):
            reason = getattr(cause, "reason", None) or type(cause).__name__
            detail = getattr(cause, "verify_message", None) or str(reason).replace("_", " ").lower()
            return "tls", f"TLS handshake with {where} failed ({detail})"
        if isinstance(cause, ConnectionResetError | BrokenPipeError):
            return "reset", f"connection to {where} was reset"
        if isinstance(cause, OSError) and cause.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "unreachable", f"no route to {where} (network unreachable)"
    text = str(exc).lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return "timeout", f"no connection to {where}{within}"
    if isinstance(exc, httpx.PoolTimeout):
        return "timeout", f"no free connection to {where}{within} (every pooled connection busy)"
    if isinstance(exc, httpx.WriteTimeout):
        return "timeout", f"sending to {where} stalled{within}"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", f"no answer from {where}{within}"
    if any(words in text for words in _DNS_WORDS):
        return "dns", f"cannot resolve host {host}"
    if "refused" in text:
        return "refused", f"connection refused by {where}"
    if "ssl" in text or "certificate" in text:
        return "tls", f"TLS handshake with {where} failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "reset", f"{where} closed the connection without an answer"
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        return "reset", f"connection to {where} was reset"
    return "network", f"network error talking to {where} ({type(exc).__name__})"

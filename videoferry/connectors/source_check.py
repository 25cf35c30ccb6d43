"""Whether an inventory's sources can be read, without reading them: a file's size, an S3 object's HEAD, a
URL's HEAD (the dry run of a migration)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from videoferry.connectors.client.network import describe_network_failure
from videoferry.connectors.redact import install_httpx_redaction
from videoferry.connectors.s3 import S3Config
from videoferry.connectors.sources import SourceError, open_source
from videoferry.connectors.tls import tls_context

__all__ = ["SourceCheck", "check_sources"]

#: Sources checked at once (files are a stat each; S3 objects and URLs one HEAD each).
CHECKS_AT_ONCE = 16
#: Seconds a URL has to answer its HEAD (connect and first byte).
URL_TIMEOUT = 10.0


@dataclass(frozen=True)
class SourceCheck:
    """What one source's check found: its size when known, and what is wrong (`problem`), or what could not
    be told from here (`unverified`: a URL this machine cannot reach, which the service fetches itself)."""

    source: str
    size: int | None = None
    problem: str | None = None
    unverified: str | None = None

    @property
    def readable(self) -> bool:
        """Whether nothing is known to be wrong."""
        return self.problem is None


def check_sources(
    sources: Iterable[str], *, s3: S3Config | None = None, at_once: int = CHECKS_AT_ONCE
) -> dict[str, SourceCheck]:
    """Check each distinct source (a path, file://, s3:// or http(s)://), at most `at_once` at a time.

    A file: it exists, is a file, is readable; its size. An S3 object: one HEAD (exists, readable by these
    credentials); its size. A URL: one HEAD without any credential (GET of its first byte when HEAD is not
    allowed); an HTTP error status is a problem (the service's import would get it too), no answer at all is
    `unverified` (the service fetches URLs from its own network). Nothing is read beyond that.
    """
    distinct = list(dict.fromkeys(sources))
    if not distinct:
        return {}
    install_httpx_redaction()
    with (
        httpx.Client(timeout=URL_TIMEOUT, follow_redirects=True, verify=tls_context()) as http,
        concurrent.futures.ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="check") as pool,
    ):
        checks = pool.map(lambda source: _check(source, s3, http), distinct)
        return {check.source: check for check in checks}


def _check(source: str, s3: S3Config | None, http: httpx.Client) -> SourceCheck:
    if source.lower().startswith(("http://", "https://")):
        return _check_url(source, http)
    try:
        opened = open_source(source, s3=s3)
    except SourceError as exc:
        return SourceCheck(source, problem=exc.reason)
    return SourceCheck(source, size=opened.size)


def _check_url(url: str, http: httpx.Client) -> SourceCheck:
    try:
        answer = http.head(url)
        if answer.status_code in (405, 501):  # no HEAD here: ask for the first byte instead
            with http.stream("GET", url, headers={"Range": "bytes=0-0"}) as answer:
                pass
    except httpx.TransportError as exc:
        _kind, words = describe_network_failure(exc, url, timeout=URL_TIMEOUT)
        return SourceCheck(
            url, unverified=f"not reachable from here ({words}); the service fetches it itself"
        )
    if answer.status_code >= 400:
        return SourceCheck(url, problem=f"the URL answers HTTP {answer.status_code}")
    return SourceCheck(url, size=_size(answer))


def _size(answer: httpx.Response) -> int | None:
    """The size of the whole resource: Content-Range's total (a ranged answer), else Content-Length."""
    total = answer.headers.get("content-range", "").rpartition("/")[2]
    if total.isdigit():
        return int(total)
    length = answer.headers.get("content-length", "")
    return int(length) if length.isdigit() and answer.status_code != 206 else None

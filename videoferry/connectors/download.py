"""Streaming GET of a signed download link (no token sent, the link never in a message or a log)."""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from videoferry.connectors.client.network import describe_network_failure
from videoferry.connectors.client.silence import Silence
from videoferry.connectors.errors import ServiceSilentError
from videoferry.connectors.redact import install_httpx_redaction
from videoferry.connectors.tls import tls_context

__all__ = ["DownloadError", "Downloaded", "Downloader"]

CHUNK = 1024 * 1024
#: Chunks read ahead of the md5 thread at most (memory: this many chunks more, whatever the body's size). 8
#: measured no faster than 1, and the archive's peak RSS then grew with the object (13 MiB, 512 vs 64 MiB).
HASH_AHEAD = 1


class DownloadError(Exception):
    """A download that failed; the message names the HTTP status or error class, never the link."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


@dataclass(frozen=True)
class Downloaded:
    """What one download delivered: byte count and md5 of the bytes."""

    size: int
    md5: str


class Downloader:
    """One pooled httpx client for download links; relative links are resolved against `base_url`.

    With `silence` (a run's client's: Transport.silence) a download is one more call to the service: its
    timeout is what is left of the outage bound once the service answers nothing, and once the bound is
    spent nothing is fetched (DownloadError, not retryable)."""

    def __init__(
        self, base_url: str, *, timeout: float = 60.0, chunk_size: int = CHUNK, silence: Silence | None = None
    ) -> None:
        install_httpx_redaction()
        self._base = base_url.rstrip("/") + "/"
        self._chunk = chunk_size
        self._timeout = timeout
        self._silence = silence or Silence()
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=10.0), follow_redirects=True, verify=tls_context()
        )

    def fetch(self, link: str, sink: Callable[[bytes], None]) -> Downloaded:
        """Stream the link's body into sink, chunk by chunk (flat memory); size and md5 of what came.

        The md5 is computed in a thread of its own, in order, while the next chunks are read and sink takes
        them (hashlib lets go of the GIL on large buffers), so hashing does not hold up the download; the
        reading waits only when HASH_AHEAD chunks are not hashed yet (at most that many chunks more held).
        """
        url = urljoin(self._base, link)
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        hashing: deque[Future[None]] = deque()  # chunks handed to the md5 thread, oldest first
        try:
            timeout = self._silence.timeout(self._timeout, "download")
        except ServiceSilentError as exc:
            raise DownloadError(f"download not sent: {exc.message}", retryable=False) from None
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="download-md5") as hasher:
            try:
                with self._http.stream(
                    "GET", url, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0))
                ) as answer:
                    self._silence.answered()
                    if answer.status_code != 200:
                        status = answer.status_code
                        raise DownloadError(
                            f"download answered HTTP {status}",
                            status=status,
                            retryable=status >= 500 or status == 429,
                        )
                    for chunk in answer.iter_bytes(self._chunk):
                        while len(hashing) >= HASH_AHEAD:
                            hashing.popleft().result()
                        hashing.append(hasher.submit(digest.update, chunk))  # one worker: in order
                        size += len(chunk)
                        sink(chunk)
            except httpx.TransportError as exc:
                # Only the host and port are named: a signed link's path and query are secrets.
                self._silence.no_answer(started, describe_network_failure(exc, url, timeout=timeout)[1])
                raise DownloadError(f"download failed: {type(exc).__name__}") from None
            except httpx.HTTPError as exc:
                raise DownloadError(f"download failed: {type(exc).__name__}") from None
            for pending in hashing:
                pending.result()
        return Downloaded(size, digest.hexdigest())

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

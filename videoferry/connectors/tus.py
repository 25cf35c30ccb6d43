"""Resumable tus 1.0.0 uploads to the endpoint returned by /v2/init, read from a ByteSource in chunks."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from videoferry.connectors.client.network import describe_network_failure
from videoferry.connectors.client.silence import Silence
from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.connectors.errors import ServiceSilentError
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.redact import install_httpx_redaction
from videoferry.connectors.sources import ByteSource, iter_chunks, iter_range
from videoferry.connectors.tls import tls_context
from videoferry.connectors.tus_chunks import MAX_CHUNK_SIZE, BodyCap, ChunkSizer
from videoferry.connectors.tus_errors import TusEndpointGoneError, TusError, maybe_offset_refusal
from videoferry.connectors.tus_held import HeldWait

if TYPE_CHECKING:
    from videoferry.connectors.client.transport import Transport

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "TUS_VERSION",
    "ProgressCallback",
    "TusError",
    "TusEndpointGoneError",
    "TusStatus",
    "TusUpload",
]

log = logging.getLogger(__name__)

TUS_VERSION = "1.0.0"
#: Seconds to wait after a 429 when no limiter is shared (spec 8: at least 5 s).
RATE_LIMIT_PAUSE = 5.0
#: 429 answers one upload may wait out before it gives up (each waits at least 5 s).
MAX_RATE_LIMITED = 60

#: Called with the number of bytes the server has acknowledged (its Upload-Offset).
ProgressCallback = Callable[[int], None]


@dataclass(frozen=True)
class TusStatus:
    """What HEAD says: bytes the server holds, and the declared total (None when not sent)."""

    offset: int
    length: int | None


class _Retry(Exception):
    """Internal: one failed step that another attempt may fix."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class TusUpload:
    """A tus client over httpx: HEAD to learn the offset (none on a fresh session), PATCH chunks, resume.

    The endpoint is used exactly as returned by init and needs no token. Requests to it are not API calls
    and do not pass the API rate limiter, unless the service answers one with 429 (it counts them): from
    then on every request waits for `limiter`. Concurrency is bounded by the caller. A failed PATCH (network,
    5xx, 409, truncated body) leads to HEAD and a continuation from the server's offset, with exponential
    backoff and jitter, at most max_attempts consecutive failures without progress. PATCHes start at
    `chunk_size` and double while the link holds, up to `max_chunk_size` (tus_chunks.ChunkSizer).
    """

    def __init__(
        self,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_chunk_size: int = MAX_CHUNK_SIZE,
        timeout: float = 60.0,
        max_attempts: int = 5,
        initial_wait: float = 0.5,
        max_wait: float = 10.0,
        max_connections: int = 32,
        client: httpx.Client | None = None,
        limiter: ApiRateLimiter | None = None,
        silence: Silence | None = None,
        send_guard: Callable[[], None] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be positive")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        install_httpx_redaction()
        self.chunk_size = chunk_size
        self.max_chunk_size = max_chunk_size
        #: A PATCH body size the upload host refused with 413, learned once for every upload that follows.
        self.body_cap = BodyCap()
        self.max_attempts = max_attempts
        self.initial_wait = initial_wait
        self.max_wait = max_wait
        self._own_client = client is None
        #: The API rate limiter: tus requests pass it only once the service has shown (a 429 from an upload
        #: address) that it counts them against the rate limit; never before.
        self.limiter = limiter
        self._counted = False  # only without a limiter; with one, the limiter holds it for every uploader
        #: The outage bound of the client it came from (Transport.silence): each request's timeout is what is
        #: left of it once the service answers nothing; spent, nothing is sent (TusError). None: no bound.
        self._silence = silence or Silence()
        self._timeout = timeout
        #: Called right before each PATCH / POST (they change the service) leaves; what it raises refuses it
        #: unsent (Transport.send_guard: a remote ledger's lease that may have ended).
        self.send_guard = send_guard
        self._counted_lock = threading.Lock()
        self._http = client or httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            headers={"Tus-Resumable": TUS_VERSION, "User-Agent": "videoferry"},
            verify=tls_context(),
        )

    @classmethod
    def from_transport(
        cls,
        transport: Transport,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_chunk_size: int = MAX_CHUNK_SIZE,
        timeout: float = 60.0,
        max_attempts: int = 5,
        initial_wait: float = 0.5,
        max_wait: float = 10.0,
    ) -> TusUpload:
        """An uploader with the transport's rate limiter, pool size, outage bound and send guard (the endpoint
        needs no token).

        The timeout stays the uploader's own (a PATCH carries a whole chunk), cut to what is left of the bound
        while the service answers nothing.
        """
        return cls(
            chunk_size=chunk_size,
            max_chunk_size=max_chunk_size,
            timeout=timeout,
            max_attempts=max_attempts,
            initial_wait=initial_wait,
            max_wait=max_wait,
            max_connections=transport.max_connections,
            limiter=transport.limiter,
            silence=transport.silence,
            send_guard=transport.guard_send,
        )

    def close(self) -> None:
        """Close the connection pool (when this object created it)."""
        if self._own_client:
            self._http.close()

    def __enter__(self) -> TusUpload:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"TusUpload(chunk_size={self.chunk_size}, max_chunk_size={self.max_chunk_size}, "
            f"max_attempts={self.max_attempts})"
        )

    # -- protocol steps -------------------------------------------------------------------------------

    def _send(self, method: str, endpoint: str, **request: Any) -> httpx.Response:
        """One request to the upload address, its timeout under the outage bound; _Retry without an answer."""
        try:
            timeout = self._silence.timeout(self._timeout, "tus_upload")
        except ServiceSilentError as exc:
            raise TusError(f"upload endpoint not asked: {exc.message}") from None
        started = time.monotonic()
        try:
            with self._admitted():
                if method not in ("HEAD", "GET", "OPTIONS"):
                    self._guard()  # PATCH / POST change the service: refused unsent once the lease may end
                response = self._http.request(
                    method, endpoint, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), **request
                )
        except httpx.TransportError as exc:
            words = describe_network_failure(exc, timeout=timeout)[1]
            self._silence.no_answer(started, words)
            raise _Retry(f"{method} failed ({words})") from None
        self._silence.answered()
        return response

    def _head(self, endpoint: str) -> TusStatus:
        response = self._send("HEAD", endpoint, headers={"Tus-Resumable": TUS_VERSION})
        self._check_status(response, "HEAD")
        offset = _int_header(response, "upload-offset")
        if offset is None:
            raise TusError(
                "upload endpoint sent no Upload-Offset", status=response.status_code, retryable=False
            )
        return TusStatus(offset=offset, length=_int_header(response, "upload-length"))

    def _patch(self, endpoint: str, offset: int, source: ByteSource, length: int) -> int | None:
        headers = {
            "Tus-Resumable": TUS_VERSION,
            "Upload-Offset": str(offset),
            "Content-Type": "application/offset+octet-stream",
            "Content-Length": str(length),
        }
        # The chunk is streamed from the source as httpx sends it (a local file in 1 MiB blocks), as the
        # single-request upload streams its body: reading overlaps sending (the server is never idle while
        # a whole chunk is read), one block is in memory whatever the chunk size, and httpcore's send loop
        # (which copies what is left of a buffer after each partial send) only ever sees a block. It is a
        # one-shot generator: httpx's request objects end up in reference cycles that only the cyclic GC
        # frees, and an exhausted generator holds nothing. A source that fails mid-chunk raises SourceError
        # out of the send (not retried as a network error); the server keeps what arrived.
        response = self._send("PATCH", endpoint, content=iter_range(source, offset, length), headers=headers)
        if response.status_code == 409:
            raise _Retry("PATCH offset conflict (409)", status=409)
        self._check_status(response, "PATCH")
        return _int_header(response, "upload-offset")

    def _guard(self) -> None:
        if self.send_guard is not None:
            self.send_guard()

    @property
    def counted(self) -> bool:
        """Whether the service counts upload requests against the rate limit: learned from a 429 of an upload
        address by this uploader, or by any uploader sharing its limiter (one learning serves the run)."""
        return self.limiter.uploads_counted if self.limiter is not None else self._counted

    @contextmanager
    def _admitted(self) -> Iterator[None]:
        """Around one request: pass the rate limiter when the service counts upload requests (from a 429).

        The slot is held until the request's answer (or error) is back, and counts from then.
        """
        if self.counted and self.limiter is not None:
            with self.limiter.admitted():
                yield
        else:
            yield

    def _rate_limited(self) -> None:
        """An upload address answered 429: from now on tus requests pass the limiter; wait at least 5 s."""
        with self._counted_lock:
            first = not self.counted
            if self.limiter is not None:
                self.limiter.uploads_counted = True
            else:
                self._counted = True
        if first:
            log.info("the service counts upload requests against the rate limit; they now pass the limiter")
        if self.limiter is not None:
            # Everyone sharing the limiter waits (at least the service's 5 s); the next request acquires it.
            self.limiter.pause(max(RATE_LIMIT_PAUSE, self.limiter.pause_seconds))
        else:
            time.sleep(RATE_LIMIT_PAUSE + random.uniform(0, 1))

    @staticmethod
    def _check_status(response: httpx.Response, step: str) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        if status in (403, 404, 410):
            raise TusEndpointGoneError(f"upload endpoint answered {status} to {step}", status=status)
        if status == 429 or status >= 500:
            raise _Retry(f"{step} answered {status}", status=status)
        raise TusError(f"upload endpoint refused {step} with {status}", status=status, retryable=False)

    def _backoff(self, failures: int) -> None:
        ceiling = min(self.max_wait, self.initial_wait * (2 ** (failures - 1)))
        self._silence.sleep(random.uniform(0, ceiling))

    # -- public ---------------------------------------------------------------------------------------

    def server_status(self, endpoint: str) -> TusStatus:
        """HEAD the endpoint once (retried with backoff on network errors and 5xx)."""
        failures = 0
        limited = 0
        while True:
            try:
                return self._head(endpoint)
            except _Retry as exc:
                if exc.status == 429 and limited < MAX_RATE_LIMITED:
                    limited += 1
                    self._rate_limited()
                    continue
                failures += 1
                if failures >= self.max_attempts:
                    raise TusError(f"upload endpoint: {exc.reason}", status=exc.status) from None
                self._backoff(failures)

    def upload(
        self,
        endpoint: str,
        source: ByteSource,
        *,
        chunk_size: int | None = None,
        on_progress: ProgressCallback | None = None,
        offset: int | None = None,
        fresh_filesize: int | None = None,
    ) -> int:
        """Send `source` to `endpoint` from the server's offset to the end; return the final offset (= size).

        `offset` is the caller's last known offset (e.g. from the ledger): only a hint, HEAD's answer wins.
        `fresh_filesize`: the filesize this process's own init just declared for `endpoint`, nothing sent to
        it yet. Then no HEAD comes first: the first PATCH goes at 0 (a server holding bytes answers 409 as
        tus requires; then HEAD and continue). A resume (ledger, rerun, retry) leaves it None.
        on_progress(acknowledged_bytes) once the starting offset is known, and after every chunk.
        """
        size = source.size
        chunks = ChunkSizer(chunk_size or self.chunk_size, self.max_chunk_size, self.body_cap)
        if fresh_filesize is not None:  # what init declared stands for the HEAD's Upload-Length
            current = self._fits(TusStatus(offset=0, length=fresh_filesize), size)
        else:
            current = self._fits(self.server_status(endpoint), size)
            if offset is not None and offset != current:
                log.info(
                    "tus: server offset %d differs from the recorded %d; continuing from the server's",
                    current,
                    offset,
                )
        if on_progress is not None:
            on_progress(current)
        guessed = fresh_filesize is not None  # offset 0 assumed, not asked: a 409 is an answer, not a fault
        refused: TusError | None = None  # another 4xx to the guessed PATCH, until a HEAD tells why
        failures = 0
        limited = 0
        held = HeldWait()  # 409s in a row: the upload held by another request (tus_held.py)
        need_head = False
        while True:
            sending = 0  # the PATCH's body size, once one is sent
            try:
                if need_head:
                    current = self._fits(self._head(endpoint), size)
                    need_head = guessed = False
                    if refused is not None and current == 0:
                        raise refused  # the offset was right: the refusal is about something else
                    refused = None
                    if on_progress is not None:
                        on_progress(current)
                if current >= size:
                    break
                sending = chunks.next(size - current)
                began = time.monotonic()
                acknowledged = self._patch(endpoint, current, source, sending)
                guessed = False
                if acknowledged is None:  # not tus-conformant; ask instead of guessing
                    acknowledged = self._head(endpoint).offset
                if acknowledged <= current or acknowledged > size:
                    raise TusError(
                        f"upload endpoint acknowledged offset {acknowledged} after {current}",
                        offset=current,
                        retryable=False,
                    )
                chunks.went_through(acknowledged - current, time.monotonic() - began)
                current = acknowledged
                failures = 0
                held.clear()
                if on_progress is not None:
                    on_progress(current)
            except TusError as exc:
                if exc.status == 413 and chunks.too_large(sending):
                    # Never past Upload-Length (the body is what is left at most): a limit on the way.
                    log.info("tus: the upload host refused a %d-byte PATCH (413); sending smaller", sending)
                    need_head = True
                    continue
                if not (guessed and maybe_offset_refusal(exc)):
                    raise
                # The spec names tus, not its 409: another 4xx is believed only once HEAD shows offset 0.
                guessed = False
                refused = exc
                need_head = True
            except _Retry as exc:
                if exc.status == 429 and limited < MAX_RATE_LIMITED:
                    limited += 1  # "not now", not a failure: wait as the service asks, then go on
                    self._rate_limited()
                    need_head = True
                    continue
                if guessed and exc.status == 409:
                    guessed = False  # the endpoint already holds bytes: ask where it stands, at once
                    log.info("tus: the new upload endpoint already holds bytes; asking its offset")
                    need_head = True
                    continue
                if exc.status == 409 and held.conflict():  # another request holds it: wait, then HEAD
                    log.info("tus: the upload is held by another request (409); waiting for it to end")
                    self._backoff(min(held.count, 4))
                    need_head = True
                    continue
                failures += 1
                chunks.failed(sending)
                if failures >= self.max_attempts:
                    raise TusError(
                        f"upload endpoint: {exc.reason}; gave up after {failures} attempts",
                        status=exc.status,
                        offset=current,
                    ) from None
                log.warning("tus: %s at offset %d; will resume from the server's offset", exc.reason, current)
                self._backoff(failures)
                need_head = True
        return current

    @staticmethod
    def _fits(status: TusStatus, size: int) -> int:
        """The server's offset, once its declared length and offset fit the source (else non-retryable)."""
        if status.length is not None and status.length != size:
            raise TusError(
                f"upload endpoint expects {status.length} bytes but the source has {size}",
                offset=status.offset,
                retryable=False,
            )
        if status.offset > size:
            raise TusError(
                "upload endpoint holds more bytes than the source", offset=status.offset, retryable=False
            )
        return status.offset

    def post_whole(self, endpoint: str, source: ByteSource) -> None:
        """Plain POST of the whole file to the endpoint (no resume; a failure restarts from zero).

        A 429 (the service counts upload requests) is waited out and the POST sent again.
        """

        def body() -> Iterator[bytes]:
            yield from iter_chunks(source, 1024 * 1024)

        limited = 0
        while True:
            headers = {"Content-Length": str(source.size), "Content-Type": "application/octet-stream"}
            try:
                response = self._send("POST", endpoint, content=body(), headers=headers)
            except _Retry as exc:
                raise TusError(f"upload endpoint {exc.reason}") from None
            try:
                self._check_status(response, "POST")
                return
            except _Retry as exc:
                if exc.status == 429 and limited < MAX_RATE_LIMITED:
                    limited += 1  # refused before anything was stored: wait and send it again
                    self._rate_limited()
                    continue
                raise TusError(f"upload endpoint: {exc.reason}", status=exc.status) from None


def _int_header(response: httpx.Response, name: str) -> int | None:
    value = response.headers.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None

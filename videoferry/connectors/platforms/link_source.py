"""A platform video's file as the bytes a tus upload reads (`--via tus`): streamed from one GET of its
download link kept open from chunk to chunk, the link resolved again when the file host refuses it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import httpx

from videoferry.connectors.held_stream import HeldStream, read_through
from videoferry.connectors.platforms.base import DownloadLink, PlatformError
from videoferry.connectors.sources import SourceError

#: The bytes read at a time from the file host's answer (one block in memory while a range streams).
BLOCK = 1024 * 1024
#: Breaks of the file host's answer one read survives (each reopened from the first byte not yet read).
READ_ATTEMPTS = 3


class LinkSource:
    """A ByteSource (connectors/sources.py) over a download link, read chunk after chunk from one GET kept
    open (connectors/held_stream.py): a GET from an offset to the end (Range `bytes=N-`), reopened only
    after a break or a seek; a 206 taken as is, a 200 (a host that ignores Range) read on from its start,
    so a file is downloaded once, not once per chunk. `resolve` gives a fresh link; a 403 / 410 is
    resolved again once per opening. `http` follows redirects and is its owner's
    (connectors/platforms/links.PlatformLinks). The link is never shown."""

    def __init__(
        self, uri: str, link: DownloadLink, resolve: Callable[[], DownloadLink], http: httpx.Client
    ) -> None:
        self.uri = uri
        self.name = uri.replace(":", "-") + ".mp4"
        self.link = link
        self._resolve = resolve
        self._lock = threading.Lock()
        self._http = http
        self.size = link.size if link.size is not None else self._measure()
        #: Which file of the video this is: another rendition chosen since means other bytes (start over).
        self.version = f"{self.size}:{link.label}"
        self.resolved = 1
        self._held = HeldStream()

    def _measure(self) -> int:
        with self._http.stream("GET", self.link.url) as answer:
            if answer.status_code >= 300 or "content-length" not in answer.headers:
                status = answer.status_code
                raise SourceError(self.uri, f"its file's size is unknown (the file host answered {status})")
            return int(answer.headers["content-length"])

    def read_range(self, offset: int, length: int) -> bytes:
        """`min(length, size - offset)` bytes from `offset`."""
        length = max(0, min(length, self.size - offset))
        return b"".join(self.stream_range(offset, length, block=length)) if length else b""

    def stream_range(self, offset: int, length: int, block: int = BLOCK) -> Iterator[bytes]:
        """Yield the `length` bytes at `offset`, `block` bytes at a time, from the GET kept open when it
        stands at `offset`, else from a new GET from there to the end (kept for the next range); a body
        that breaks is reopened where it broke (READ_ATTEMPTS breaks at most)."""
        length = max(0, min(length, self.size - offset))
        if length:
            yield from read_through(
                self._held,
                self._open_at,
                offset,
                length,
                block=block,
                size=self.size,
                broken=(httpx.TransportError,),
                attempts=READ_ATTEMPTS,
                fail=lambda reason: SourceError(self.uri, reason),
            )

    def _open_at(self, offset: int) -> _Answer:
        """A GET of the file from `offset` to its end; a 403 / 410 resolves the link again, once."""
        for attempt in (1, 2):
            with self._lock:
                link = self.link
            answer = self._get(link, offset)
            if answer.status_code < 300:
                return _Answer(self.uri, answer, offset, self.size)
            answer.close()
            if answer.status_code in (403, 410) and attempt == 1:
                try:
                    fresh = self._resolve()
                except PlatformError as exc:
                    why = f"its link expired and a fresh one was refused: {exc}"
                    raise SourceError(self.uri, why) from None
                with self._lock:
                    self.link, self.resolved = fresh, self.resolved + 1
                continue
            raise SourceError(self.uri, f"the file host answered {answer.status_code}")
        raise SourceError(self.uri, "a fresh link was refused too")

    def _get(self, link: DownloadLink, offset: int) -> httpx.Response:
        request = self._http.build_request("GET", link.url, headers={"Range": f"bytes={offset}-"})
        try:
            return self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise SourceError(self.uri, f"the file host does not answer ({type(exc).__name__})") from None

    def close(self) -> None:
        """Close the GET kept open, if any (one read to the end closes it by itself)."""
        self._held.close()


class _Answer:
    """The body of one GET of the file, from `offset` on: a 206 taken as is (its Content-Range checked), a
    200 (the host ignores Range: the whole file) read past the bytes before `offset` once, here."""

    def __init__(self, uri: str, response: httpx.Response, offset: int, size: int) -> None:
        self._response = response
        self._blocks = response.iter_bytes(BLOCK)
        self._rest = bytearray()
        self._done = False
        span = response.headers.get("content-range", "")
        if response.status_code == 206:
            first, _, total = span.removeprefix("bytes ").partition("/")
            if first.partition("-")[0] != str(offset) or total not in (str(size), "*"):
                response.close()
                raise SourceError(uri, f"asked from byte {offset} of {size}, the file host answered {span!r}")
        else:
            whole = response.headers.get("content-length")
            if whole is not None and whole != str(size):
                response.close()
                raise SourceError(uri, f"the file host answered {whole} bytes, not {size}")
            skipped = 0
            while skipped < offset:  # the bytes before `offset`, read and dropped a block at a time
                dropped = len(self.read(min(BLOCK, offset - skipped)))
                if not dropped:
                    response.close()
                    raise SourceError(uri, f"the file host's answer ended at byte {skipped}, expected {size}")
                skipped += dropped

    def read(self, size: int) -> bytes:
        """Up to `size` bytes (b"" at the end)."""
        while len(self._rest) < size and not self._done:
            block = next(self._blocks, None)
            if block is None:
                self._done = True
            else:
                self._rest += block
        data = bytes(self._rest[:size])
        del self._rest[:size]
        return data

    def close(self) -> None:
        self._response.close()

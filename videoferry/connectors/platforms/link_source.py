"""A platform video's file as the bytes a tus upload reads (`--via tus`): ranges fetched from its download
link as they are sent, the link resolved again when the file host refuses it (403 / 410: expired)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import httpx

from videoferry.connectors.platforms.base import DownloadLink, PlatformError
from videoferry.connectors.sources import SourceError

#: The bytes read per request of the file host when it ignores Range and answers the whole file.
BLOCK = 1024 * 1024


class LinkSource:
    """A ByteSource (connectors/sources.py) over a download link: each read_range is one GET with a Range
    header (206 taken as is; a host that ignores Range and answers 200 is read up to the range and closed).
    `resolve` gives a fresh link; a 403 / 410 is resolved again once per read. `http` follows redirects
    and is its owner's (connectors/platforms/links.PlatformLinks). The link is never shown."""

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

    def _measure(self) -> int:
        with self._http.stream("GET", self.link.url) as answer:
            if answer.status_code >= 300 or "content-length" not in answer.headers:
                status = answer.status_code
                raise SourceError(self.uri, f"its file's size is unknown (the file host answered {status})")
            return int(answer.headers["content-length"])

    def read_range(self, offset: int, length: int) -> bytes:
        """`min(length, size - offset)` bytes from `offset`."""
        length = max(0, min(length, self.size - offset))
        if length == 0:
            return b""
        for attempt in (1, 2):
            with self._lock:
                link = self.link
            status, data = self._get(link, offset, length)
            if status < 300:
                return data
            if status in (403, 410) and attempt == 1:
                try:
                    fresh = self._resolve()
                except PlatformError as exc:
                    why = f"its link expired and a fresh one was refused: {exc}"
                    raise SourceError(self.uri, why) from None
                with self._lock:
                    self.link, self.resolved = fresh, self.resolved + 1
                continue
            raise SourceError(self.uri, f"the file host answered {status}")
        raise SourceError(self.uri, "a fresh link was refused too")

    def _get(self, link: DownloadLink, offset: int, length: int) -> tuple[int, bytes]:
        headers = {"Range": f"bytes={offset}-{offset + length - 1}"}
        try:
            with self._http.stream("GET", link.url, headers=headers) as answer:
                if answer.status_code >= 300:
                    return answer.status_code, b""
                if answer.status_code == 206:
                    data = answer.read()
                else:  # the whole file: skip to the range, read it, close
                    data = _slice(answer.iter_bytes(BLOCK), offset, length)
        except httpx.TransportError as exc:
            raise SourceError(self.uri, f"the file host does not answer ({type(exc).__name__})") from None
        if len(data) != length:
            raise SourceError(self.uri, f"the file host sent {len(data)} bytes of {length} at {offset}")
        return 200, data


def _slice(blocks: Iterator[bytes], offset: int, length: int) -> bytes:
    out = bytearray()
    seen = 0
    for block in blocks:
        end = seen + len(block)
        if end > offset:
            out += block[max(0, offset - seen) : offset + length - seen]
        seen = end
        if len(out) >= length:
            break
    return bytes(out[:length])

"""One open answer of a byte source kept between reads, so that consecutive chunks come from one request."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol


class Body(Protocol):
    """An answer's body being read: up to ``size`` bytes per read (b"" at its end), then closed."""

    def read(self, size: int) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class Held:
    """An open body and the source offset its next byte belongs to."""

    body: Body
    offset: int


class HeldStream:
    """At most one open answer of a source, kept between reads. A reader takes it when it stands at the
    offset wanted (else it is closed: a seek, a resume) and gives it back when its range is read, so two
    readers never share one answer and the next chunk goes on from the same request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Held | None = None

    def take(self, offset: int) -> Held | None:
        """The kept answer if its next byte is at ``offset``; else None (one kept elsewhere is closed)."""
        with self._lock:
            held, self._held = self._held, None
        if held is not None and held.offset != offset:
            _close(held)
            held = None
        return held

    def give(self, held: Held, size: int) -> None:
        """Keep ``held`` for the next read; one at the source's end (``size``) is closed instead."""
        if held.offset >= size:
            _close(held)
            return
        with self._lock:
            older, self._held = self._held, held
        if older is not None:
            _close(older)

    def close(self) -> None:
        """Close the kept answer, if any."""
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            _close(held)


def _close(held: Held) -> None:
    try:
        held.body.close()
    except Exception:  # noqa: BLE001 - a body that fails to close is dropped all the same
        pass


def read_through(
    stream: HeldStream,
    open_at: Callable[[int], Body],
    start: int,
    length: int,
    *,
    block: int,
    size: int,
    broken: tuple[type[BaseException], ...],
    attempts: int,
    fail: Callable[[str], Exception],
) -> Iterator[bytes]:
    """Yield the ``length`` bytes at ``start`` at most ``block`` bytes at a time (one block in memory), from
    the answer ``stream`` keeps when it stands at ``start``, else from ``open_at(start)`` (a request from
    that offset to the source's end). A body that breaks (an exception in ``broken``) is reopened from the
    first byte not yet yielded, ``attempts`` breaks at most; what was yielded is never yielded again. The
    answer is given back to ``stream`` when the range is read or the reader stops early. ``fail(reason)``
    makes the error raised when the bytes cannot be had."""
    offset, end = start, start + length
    held = stream.take(offset)
    breaks = 0
    try:
        while offset < end:
            if held is None:
                held = Held(open_at(offset), offset)
            try:
                data = held.body.read(min(block, end - offset))
            except broken as exc:
                _close(held)
                held = None
                breaks += 1
                if breaks >= attempts:
                    raise fail(
                        f"read failed at byte {offset} ({type(exc).__name__}) {breaks} times"
                    ) from None
                time.sleep(0.2 * breaks)
                continue
            if not data:
                _close(held)
                held = None
                raise fail(f"the answer ended at byte {offset}, expected {size} bytes")
            offset += len(data)
            held.offset = offset
            yield data
    finally:
        if held is not None:
            stream.give(held, size)

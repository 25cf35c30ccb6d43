"""The size of a tus upload's next PATCH: doubled while the link holds, back to the first after a failure."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

#: The largest PATCH body the chunk grows to (a chunk that starts larger stays as it is).
MAX_CHUNK_SIZE = 128 * 1024 * 1024
#: A chunk doubles only after a PATCH that went through within this many seconds, so that one PATCH carries
#: at most about twice that of the link: what a cut may have to send again when a service keeps none of a
#: broken PATCH's bytes (the spec does not say whether it keeps them).
GROW_SECONDS = 5.0


@dataclass
class BodyCap:
    """The smallest PATCH body the upload host refused with 413 (a proxy's limit), for all of an uploader."""

    refused: int | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def learn(self, size: int) -> None:
        with self._lock:
            if self.refused is None or size < self.refused:
                self.refused = size


class ChunkSizer:
    """One upload's PATCH sizes.

    The first PATCH carries `first` bytes (`--chunk-mib`). Each PATCH that went through whole within
    GROW_SECONDS doubles the next, up to `ceiling` and below a body size the host refused. A failed PATCH
    (network, 5xx, cut) sends the next at `first` again, and this upload grows no further than half the
    failed size (so a link that breaks large bodies does not break them again and again). A 413 to a body
    larger than `first` (413 is tus's answer to a body past the upload's length, which this client never
    sends: something on the way limits bodies) is learned for the uploader and the body halved.
    """

    def __init__(self, first: int, ceiling: int = MAX_CHUNK_SIZE, cap: BodyCap | None = None) -> None:
        if first < 1:
            raise ValueError("chunk_size must be positive")
        self.first = first
        self.ceiling = max(first, ceiling)
        self.cap = cap if cap is not None else BodyCap()
        self.size = first

    def _bounded(self, size: int) -> int:
        refused = self.cap.refused
        if refused is not None and size >= refused:
            size = refused // 2
        return max(self.first, min(size, self.ceiling))

    def next(self, remaining: int) -> int:
        """Bytes of the next PATCH, `remaining` bytes still to send."""
        self.size = self._bounded(self.size)
        return min(self.size, remaining)

    def went_through(self, sent: int, seconds: float) -> None:
        """A PATCH of `sent` bytes was acknowledged after `seconds`."""
        if sent >= self.size and seconds <= GROW_SECONDS:
            self.size = self._bounded(self.size * 2)

    def failed(self, sent: int) -> None:
        """A PATCH of `sent` bytes failed (no answer, 5xx, a conflict): start again from the first size."""
        if sent > self.first:
            self.ceiling = max(self.first, min(self.ceiling, sent // 2))
        self.size = self.first

    def too_large(self, sent: int) -> bool:
        """A PATCH of `sent` bytes was answered 413: True when a smaller body may pass (the next is halved),
        False when it already was the first size (nothing smaller to try: the refusal stands)."""
        if sent <= self.first:
            return False
        self.cap.learn(sent)
        self.size = self._bounded(sent // 2)
        return True

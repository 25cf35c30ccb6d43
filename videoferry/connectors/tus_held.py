"""How long a tus upload another request holds (PATCHes answered 409 in a row) is waited for."""

from __future__ import annotations

import time
from collections.abc import Callable

#: 409s in a row are waited for this long before they count as failures: the request holding the upload may
#: be a dead writer's PATCH whose bytes the server still reads (a killed worker's connection: what the
#: kernel had taken of its body still arrives, at the link's speed), and it ends when they are in.
HELD_WAIT_SECONDS = 60.0


class HeldWait:
    """The 409s in a row of one upload: waited for up to `limit` seconds from the first (then failures)."""

    def __init__(self, limit: float = HELD_WAIT_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._since: float | None = None
        self.count = 0  #: 409s in this row

    def conflict(self) -> bool:
        """One more 409 in a row; True while the row is still waited for (not a failure)."""
        now = self._clock()
        if self._since is None:
            self._since = now
        self.count += 1
        return now - self._since < self.limit

    def clear(self) -> None:
        """A PATCH went through: the next 409 starts a new row."""
        self._since = None
        self.count = 0

"""The processing-queue variant: at most N videos of a workspace processed at once, the others in order."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class _Slots:
    """N slots handed out strictly first come, first served (on the server's event loop)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.busy = 0
        self.waiting: deque[asyncio.Future[None]] = deque()

    async def take(self) -> None:
        """Take a slot: at once when one is free and nobody waits, else after everyone already waiting."""
        if self.busy < self.size and not self.waiting:
            self.busy += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        try:
            await turn  # give() counted the slot as ours before waking us
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.give()  # woken and cancelled at once: pass the slot on
            else:
                self.waiting.remove(turn)
            raise

    def give(self) -> None:
        """Give a slot back: straight to the first one waiting, if any."""
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes straight to the next in line
                return
        self.busy -= 1


class ProcessingQueues:
    """Each workspace's slots; a new concurrency (variants set again) starts a new queue for new videos."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slots] = {}

    @asynccontextmanager
    async def slot(self, workspace_id: str, size: int) -> AsyncIterator[None]:
        """Hold one of the workspace's `size` slots (waiting in order for one) for the block."""
        slots = self._slots.get(workspace_id)
        if slots is None or slots.size != size:
            slots = self._slots[workspace_id] = _Slots(size)
        await slots.take()
        try:
            yield
        finally:
            slots.give()

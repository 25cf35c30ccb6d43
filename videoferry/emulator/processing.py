"""Processing driver (immediate / manual / timed) and URL imports on the server's loop; it owns the webhook
sender (emulator/webhooks.py)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx

from videoferry.emulator.backends.core import Emulator
from videoferry.emulator.files import md5_file
from videoferry.emulator.media.edit import cut
from videoferry.emulator.media.probe import MediaInfo, probe
from videoferry.emulator.queue import ProcessingQueues
from videoferry.emulator.state import Workspace
from videoferry.emulator.webhooks import WebhookSender

log = logging.getLogger("videoferry.emulator.processing")
T = TypeVar("T")
NOT_MEDIA = "the uploaded file is not a playable video"
#: The reason a URL import ends in error when the URL is a web page (a watch page) instead of a media file.
WEB_PAGE = "the URL is a web page, not a media file"
_PAGE_TYPES = ("text/html", "application/xhtml+xml")
_PAGE_STARTS = (b"<!doctype html", b"<html")


class Processor:
    """Runs media work in a thread pool and state changes on the loop; its `webhooks` deliver in order."""

    def __init__(self, emu: Emulator, loop: asyncio.AbstractEventLoop, workers: int = 2) -> None:
        self.emu = emu
        self.loop = loop
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="emulator-media")
        self.tasks: set[asyncio.Future[Any]] = set()
        self.http: httpx.AsyncClient | None = None
        self.webhooks = WebhookSender(emu, loop, self.spawn)
        self.queues = ProcessingQueues()  # processing-queue: each workspace's slots
        self._sender: asyncio.Task[None] | None = None
        emu.on_status = self.webhooks.notify
        emu.on_process = self.submit

    def start(self) -> None:
        """Start the webhook sender (call on the loop)."""
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0), follow_redirects=True)
        self.webhooks.http = self.http
        self._sender = self.loop.create_task(self.webhooks.run())

    async def close(self) -> None:
        """Stop background work (call on the loop)."""
        for task in list(self.tasks):
            task.cancel()
        if self._sender is not None:
            self._sender.cancel()
        if self.http is not None:
            await self.http.aclose()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def spawn(self, coro: Any) -> None:
        """Run a coroutine in the background on the loop (thread-safe)."""

        def create() -> None:
            task = self.loop.create_task(coro)
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        if _on_loop(self.loop):
            create()
        else:
            self.loop.call_soon_threadsafe(create)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking media work in the pool."""
        return await self.loop.run_in_executor(self.pool, lambda: fn(*args, **kwargs))

    # ------------------------------------------------------------------ processing

    def submit(self, ws: Workspace, video_id: str, generation: int, info: MediaInfo | None) -> None:
        """Process a stored file: probe (unless known), apply a pending trim, follow the workspace's mode."""
        self.spawn(self._process(ws, video_id, generation, info))

    async def _process(self, ws: Workspace, video_id: str, generation: int, info: MediaInfo | None) -> None:
        emu = self.emu
        try:
            found = emu.lifecycle.processing_input(ws, video_id, generation)
            if found is None:
                return
            path, trim = found
            if info is None:
                info = await self.run(probe, path)
                if info is not None and trim is not None:
                    dst = emu.new_file(ws, suffix=".mp4")
                    try:
                        info = await self.run(cut, path, dst, trim=[trim])
                    except ValueError as exc:
                        dst.unlink(missing_ok=True)
                        emu.lifecycle.processing_finished(
                            ws, video_id, generation, "error", f"trim failed: {exc}"
                        )
                        return
                    digest = await self.run(md5_file, dst)
                    if not emu.lifecycle.processing_trimmed(ws, video_id, generation, dst, digest):
                        return
            if info is None:
                emu.lifecycle.processing_finished(ws, video_id, generation, "error", NOT_MEDIA)
                return
            started = emu.lifecycle.processing_started(ws, video_id, generation, info)
            if started is None or started[0] == "manual":
                return
            if ws.variants.has("processing-queue"):
                await self._queued(ws, video_id, generation, started)  # finished inside its slot
                return
            if started[0] == "timed":
                await asyncio.sleep(started[1])
            emu.lifecycle.processing_finished(ws, video_id, generation, "done")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure ends processing with status error
            log.exception("processing failed")
            emu.lifecycle.processing_finished(
                ws, video_id, generation, "error", f"processing failed: {type(exc).__name__}"
            )

    async def _queued(
        self, ws: Workspace, video_id: str, generation: int, started: tuple[str, float]
    ) -> None:
        """processing-queue: wait for one of the workspace's processing_concurrency slots (in the order videos
        entered processing), then process for the timed mode's seconds (queue_seconds in immediate mode)."""
        seconds = started[1] if started[0] == "timed" else ws.variants.queue_seconds
        async with self.queues.slot(ws.id, ws.variants.processing_concurrency):
            if self.emu.lifecycle.processing_turn(ws, video_id, generation, seconds):
                await asyncio.sleep(seconds)
            # Done before the slot passes on: the next video's turn never overlaps this one's end.
            self.emu.lifecycle.processing_finished(ws, video_id, generation, "done")

    # ------------------------------------------------------------------ URL import

    def import_url(
        self, ws: Workspace, video_id: str, generation: int, url: str, filename: str | None
    ) -> None:
        """Fetch the file behind X-Video-URL in the background; unreachable -> error with the reason."""
        self.spawn(self._import(ws, video_id, generation, url, filename))

    async def _import(
        self, ws: Workspace, video_id: str, generation: int, url: str, filename: str | None
    ) -> None:
        assert self.http is not None
        name = filename or (httpx.URL(url).path.rsplit("/", 1)[-1] if url else "") or "video"
        path = self.emu.new_file(ws, name)
        digest = hashlib.md5()
        size = 0
        try:
            async with self.http.stream("GET", url) as response:
                if response.status_code >= 400:
                    raise _FetchError(f"the URL answered HTTP {response.status_code}")
                content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type in _PAGE_TYPES:
                    raise _FetchError(WEB_PAGE)
                with path.open("wb") as out:
                    async for chunk in response.aiter_bytes(1 << 16):
                        if size == 0 and _web_page(chunk):
                            raise _FetchError(WEB_PAGE)
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
        except asyncio.CancelledError:
            path.unlink(missing_ok=True)
            raise
        except _FetchError as exc:
            path.unlink(missing_ok=True)
            self.emu.uploads.single_failed(ws, video_id, generation, str(exc))
            return
        except (httpx.HTTPError, OSError, ValueError) as exc:
            path.unlink(missing_ok=True)
            self.emu.uploads.single_failed(
                ws, video_id, generation, f"the URL could not be fetched: {type(exc).__name__}"
            )
            return
        self.emu.uploads.single_received(ws, video_id, generation, path, size, digest.hexdigest(), name)


class _FetchError(Exception):
    """The URL answered with an error status or with a web page."""


def _web_page(head: bytes) -> bool:
    """Whether a body starts like an HTML document (a watch page served without its type)."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n")[:20].lower().startswith(_PAGE_STARTS)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False

"""media.update.status delivery: one ordered sender, the webhook faults, and forged webhooks on demand."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx

from videoferry.emulator.backends.core import Emulator
from videoferry.emulator.errors import Invalid, validation
from videoferry.emulator.faults import NO_WEBHOOK_FAULT, WebhookDecision
from videoferry.emulator.ids import new_id
from videoferry.emulator.state import Workspace

log = logging.getLogger("videoferry.emulator.webhooks")
TIMEOUT = 5.0
#: The message of a forged `error` claim (a real failure's message reads alike).
FORGED_ERROR = "processing failed"
Spawn = Callable[[Coroutine[Any, Any, None]], None]


@dataclass
class Delivery:
    """One webhook to POST: where, with which credentials, what; `key` ties a real one to its video."""

    url: str
    auth: tuple[str, str] | None
    payload: dict[str, Any]
    key: tuple[str, str] | None = None  # (workspace id, video id) of a status the service emitted
    fault: WebhookDecision = field(default_factory=WebhookDecision)
    sent: asyncio.Future[int | None] | None = None  # the receiver's status, for who waits on it


class WebhookSender:
    """Sends deliveries in order (one sender, 5 s timeout, no retries) and applies the webhook faults.

    Lost: not sent. Duplicated: sent twice in a row. Out of order: held until the video's next delivery
    has been sent (at most `ms`). Late: sent after `ms` on its own, so later ones may pass it. Forged: a
    webhook the service never emitted (a false claim, see faults.CLAIMS) is sent after the real one.
    """

    def __init__(self, emu: Emulator, loop: asyncio.AbstractEventLoop, spawn: Spawn) -> None:
        self.emu = emu
        self.loop = loop
        self.spawn = spawn
        self.queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self.held: dict[tuple[str, str], list[Delivery]] = {}
        self.http: httpx.AsyncClient | None = None

    def notify(self, ws: Workspace, video_id: str, status: str, message: str | None) -> None:
        """Queue the webhook of a status change (thread-safe), with the faults drawn for it."""
        if not ws.webhook_url:
            return
        fault = ws.faults.decide_webhook(status) if ws.faults is not None else NO_WEBHOOK_FAULT
        reason = message if status == "error" and message else None
        deliveries = []
        if not fault.lost:
            payload = ws.variants.webhook_body(video_id, status, reason)
            deliveries.append(Delivery(ws.webhook_url, _configured(ws), payload, (ws.id, video_id), fault))
        for claim, auth in fault.forged:
            target = self._target(ws, claim, video_id, strict=False)
            deliveries.append(self._forged(ws, claim, target, auth))
        for delivery in deliveries:  # always through the loop's callbacks: one FIFO whoever calls
            self.loop.call_soon_threadsafe(self.queue.put_nowait, delivery)

    async def run(self) -> None:
        """The sender: one delivery after the other, in the order the statuses changed."""
        while True:
            delivery = await self.queue.get()
            fault, key = delivery.fault, delivery.key
            if fault.late_ms:
                self.spawn(self._later(delivery, fault.late_ms))
                continue
            if fault.hold_ms and key is not None:
                self.held.setdefault(key, []).append(delivery)
                self.spawn(self._release(delivery, fault.hold_ms))
                continue
            status = await self.post(delivery)
            if delivery.sent is not None and not delivery.sent.done():
                delivery.sent.set_result(status)
            if fault.duplicate:
                await self.post(delivery)
            for waiting in self.held.pop(key, []) if key is not None else []:
                await self.post(waiting)  # a later status went first: the held earlier one follows it

    async def post(self, delivery: Delivery) -> int | None:
        """One POST; the receiver's HTTP status, None when it did not answer."""
        assert self.http is not None
        auth = httpx.BasicAuth(*delivery.auth) if delivery.auth is not None else httpx.USE_CLIENT_DEFAULT
        try:
            response = await self.http.post(delivery.url, json=delivery.payload, auth=auth, timeout=TIMEOUT)
        except httpx.HTTPError:
            log.info("webhook delivery failed (no retries)")
            return None
        return response.status_code

    async def _later(self, delivery: Delivery, ms: float) -> None:
        await asyncio.sleep(ms / 1000.0)
        await self.post(delivery)

    async def _release(self, delivery: Delivery, ms: float) -> None:
        await asyncio.sleep(ms / 1000.0)
        assert delivery.key is not None
        waiting = self.held.get(delivery.key, [])
        if delivery in waiting:  # no later status came: it goes out late
            waiting.remove(delivery)
            if not waiting:
                self.held.pop(delivery.key, None)
            await self.post(delivery)

    # ------------------------------------------------------------------ forged webhooks

    async def forge(self, ws: Workspace, claim: str, video_id: str | None, auth: str) -> dict[str, Any]:
        """Send one forged webhook (control API): {claim, video_id, auth, status}.

        It joins the sender's queue (so it follows the deliveries already waiting) and the answer comes
        once it was sent, with the receiver's HTTP status.
        """
        if not ws.webhook_url:
            raise validation(Invalid("url", "required", "a webhook URL (PUT /_emulator/webhook first)"))
        with self.emu.lock:
            target = video_id or self._target(ws, claim, None, strict=True)
            delivery = self._forged(ws, claim, target, auth)
        delivery.sent = self.loop.create_future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, delivery)  # behind the statuses queued so far
        status = await delivery.sent
        return {"claim": claim, "video_id": target, "auth": auth, "status": status}

    def _target(self, ws: Workspace, claim: str, current: str | None, *, strict: bool) -> str:
        """The video a false claim names (call under the lock).

        done-processing: a video that is not done (the one whose status just changed, if it is not done);
        error-done: a video that is done; done-unknown (or no candidate, unless strict): an id the workspace
        does not have. Strict (on demand) takes the oldest candidate and refuses when there is none.
        """
        if claim == "done-unknown":
            return new_id()
        if claim == "done-processing":
            now = ws.videos.get(current) if current is not None else None
            if now is not None and now.status != "done":
                return now.id
            pool = [v for v in ws.videos.values() if v.status not in ("done", "error", "aborted")]
        else:
            pool = [v for v in ws.videos.values() if v.status == "done"]
        pool.sort(key=lambda v: v.seq)
        if not pool:
            if strict:
                wanted = "still processing" if claim == "done-processing" else "done"
                raise validation(Invalid("claim", "not exists", f"a video that is {wanted}"))
            return new_id()
        if strict or ws.faults is None:
            return pool[0].id
        return ws.faults.draw(tuple(v.id for v in pool))

    def _forged(self, ws: Workspace, claim: str, video_id: str, auth: str) -> Delivery:
        """A webhook the service never emitted, in the workspace's shape, to its registered URL."""
        status = "error" if claim == "error-done" else "done"
        payload = ws.variants.webhook_body(video_id, status, FORGED_ERROR if status == "error" else None)
        credentials = None
        if auth == "configured":
            credentials = _configured(ws)
        elif auth == "wrong":
            credentials = (ws.webhook_username or "videoferry", "forged-" + secrets.token_hex(8))
        assert ws.webhook_url is not None
        return Delivery(ws.webhook_url, credentials, payload)


def _configured(ws: Workspace) -> tuple[str, str] | None:
    """The workspace's webhook credentials (None when no username is configured)."""
    if ws.webhook_username is None:
        return None
    return ws.webhook_username, ws.webhook_password or ""

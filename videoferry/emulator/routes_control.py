"""The control API under /_emulator/ (no token needed for workspaces/reset/requests, never rate limited)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from starlette.requests import Request

from videoferry.emulator.app import Receive, Resp, Scope, Send, authenticate, error_resp, send_response
from videoferry.emulator.backends.core import PROCESSING_MODES, Emulator
from videoferry.emulator.broadcast import control_routes
from videoferry.emulator.errors import ApiError, Invalid, method_not_allowed, not_found, validation
from videoferry.emulator.faults import AUTHS, CLAIMS, parse_faults
from videoferry.emulator.ids import parse_id
from videoferry.emulator.ratelimit import SlidingWindowLimiter
from videoferry.emulator.state import STATUSES, Workspace
from videoferry.emulator.validation import Fields, parse_json_bytes
from videoferry.emulator.variants import PARAMS, VARIANTS, Variants, make_variants
from videoferry.emulator.views import video_json
from videoferry.emulator.webhooks import WebhookSender

#: The least poll rule the control API takes (seconds): a test's fastest polls.
MIN_POLL_RULE = 0.05

ControlHandler = Callable[[Request, dict[str, str]], Awaitable[Resp]]


class ControlApp:
    """Dispatches /_emulator/ requests to handlers; errors use the API's error body."""

    def __init__(
        self,
        emu: Emulator,
        limiter: SlidingWindowLimiter,
        on_reset: Callable[[], None],
        webhooks: WebhookSender,
    ) -> None:
        self.emu = emu
        self.limiter = limiter
        self.on_reset = on_reset
        self.webhooks = webhooks
        table: list[tuple[str, dict[str, ControlHandler]]] = [
            ("/_emulator/workspaces", {"POST": self.create_workspace}),
            ("/_emulator/projects", {"POST": self.create_project}),
            ("/_emulator/faults", {"PUT": self.set_faults, "DELETE": self.clear_faults}),
            ("/_emulator/processing", {"PUT": self.set_processing}),
            ("/_emulator/poll-rule", {"PUT": self.set_poll_rule}),
            ("/_emulator/videos/{video_id}/status", {"POST": self.set_status}),
            ("/_emulator/webhook", {"PUT": self.set_webhook}),
            ("/_emulator/webhook/forge", {"POST": self.forge_webhook}),
            ("/_emulator/limits", {"PUT": self.set_limits}),
            ("/_emulator/requests", {"GET": self.requests}),
            ("/_emulator/videos", {"GET": self.videos}),
            ("/_emulator/variants", {"GET": self.list_variants, "PUT": self.set_variants}),
            ("/_emulator/reset", {"POST": self.reset}),
        ]
        table += control_routes(self)  # live, DRM license, scoped tokens (emulator/broadcast.py)
        self.routes = [
            (re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", p) + "$"), m) for p, m in table
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        try:
            resp = await self._dispatch(Request(scope, receive), path, scope["method"])
        except ApiError as exc:
            resp = error_resp(exc, path)
        await send_response(send, resp, request_id=resp.status not in (404, 405))

    async def _dispatch(self, request: Request, path: str, method: str) -> Resp:
        for pattern, methods in self.routes:
            match = pattern.match(path)
            if match:
                handler = methods.get(method)
                if handler is None:
                    raise method_not_allowed()
                return await handler(request, match.groupdict())
        raise not_found("route")

    # ------------------------------------------------------------------ helpers

    def _workspace(self, request: Request) -> Workspace:
        return authenticate(self.emu, request.headers.get("authorization"))

    async def _body(self, request: Request, *, optional: bool = False) -> dict[str, Any]:
        raw = await request.body()
        if optional and not raw.strip():
            return {}
        return parse_json_bytes(raw)

    # ------------------------------------------------------------------ handlers

    async def create_workspace(self, request: Request, _: dict[str, str]) -> Resp:
        """POST /_emulator/workspaces {rate_per_second?, rate_per_minute?, processing?, ...seconds?,
        poll_rule_seconds?, variants?}."""
        f = Fields(await self._body(request, optional=True))
        rps = f.integer("rate_per_second", minimum=0)
        rpm = f.integer("rate_per_minute", minimum=0)
        mode = f.oneof("processing", PROCESSING_MODES)
        seconds = f.number("processing_seconds", minimum=0)
        poll_rule = f.number("poll_rule_seconds", minimum=MIN_POLL_RULE)
        f.check()
        body = await self._body(request, optional=True)
        variants = _variants(body) if "variants" in body else None
        ws = self.emu.create_workspace(
            rate_per_second=rps, rate_per_minute=rpm, processing=mode, processing_seconds=seconds
        )
        if variants is not None:
            ws.variants = variants
        if poll_rule is not None:
            ws.poll_rule_seconds = poll_rule
        return Resp(200, self.emu.workspace_info(ws))

    async def list_variants(self, request: Request, _: dict[str, str]) -> Resp:
        """GET /_emulator/variants: every variant name and what it changes."""
        return Resp(200, {"data": dict(VARIANTS)})

    async def set_variants(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/variants {variants: [names], clock_offset_seconds?, list_lag_seconds?, ...}."""
        ws = self._workspace(request)
        ws.variants = _variants(await self._body(request))
        return Resp(200, ws.variants.as_dict())

    async def create_project(self, request: Request, _: dict[str, str]) -> Resp:
        """POST /_emulator/projects: a project with one folder."""
        ws = self._workspace(request)
        project_id, folder_id = self.emu.create_project(ws)
        return Resp(200, {"project_id": project_id, "folder_id": folder_id})

    async def set_faults(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/faults {seed, rules}."""
        ws = self._workspace(request)
        ws.faults = parse_faults(await self._body(request))
        return Resp(200, {"seed": ws.faults.seed, "rules": len(ws.faults.rules)})

    async def clear_faults(self, request: Request, _: dict[str, str]) -> Resp:
        """DELETE /_emulator/faults."""
        ws = self._workspace(request)
        ws.faults = None
        return Resp(200, {"rules": 0})

    async def set_processing(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/processing {mode, seconds?}."""
        ws = self._workspace(request)
        f = Fields(await self._body(request))
        mode = f.oneof("mode", PROCESSING_MODES, required=True)
        seconds = f.number("seconds", minimum=0)
        f.check()
        assert mode is not None
        ws.processing = mode
        if seconds is not None:
            ws.processing_seconds = seconds
        return Resp(200, {"mode": ws.processing, "seconds": ws.processing_seconds})

    async def set_poll_rule(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/poll-rule {seconds}: the workspace's poll rule (the spec's is 5 s); answers then
        state one other than the spec's in X-Poll-Rule-Seconds (tests make runs poll faster only this way)."""
        ws = self._workspace(request)
        f = Fields(await self._body(request))
        seconds = f.number("seconds", required=True, minimum=MIN_POLL_RULE)
        f.check()
        assert seconds is not None
        ws.poll_rule_seconds = seconds
        return Resp(200, {"seconds": ws.poll_rule_seconds})

    async def set_status(self, request: Request, params: dict[str, str]) -> Resp:
        """POST /_emulator/videos/{id}/status {status, message?}."""
        ws = self._workspace(request)
        video_id = parse_id(params["video_id"])
        f = Fields(await self._body(request))
        status = f.oneof("status", STATUSES, required=True)
        message = f.string("message")
        f.check()
        assert status is not None
        video = self.emu.lifecycle.force_status(ws, video_id, status, message)
        return Resp(200, {"data": video_json(video, self.emu.base_url, "get")})

    async def set_webhook(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/webhook {url, username?, password?}; a null url clears it."""
        ws = self._workspace(request)
        f = Fields(await self._body(request))
        url = f.string("url")
        username = f.string("username")
        password = f.string("password")
        if url is not None and not url.startswith(("http://", "https://")):
            f.add("url", "url", "http or https URL")
        f.check()
        ws.webhook_url, ws.webhook_username, ws.webhook_password = url, username, password
        return Resp(200, {"url": url, "basic_auth": username is not None})

    async def forge_webhook(self, request: Request, _: dict[str, str]) -> Resp:
        """POST /_emulator/webhook/forge {claim?, video_id?, auth?}: one webhook the service never emitted."""
        ws = self._workspace(request)
        f = Fields(await self._body(request, optional=True))
        claim = f.oneof("claim", CLAIMS) or "done-unknown"
        video_id = f.ident("video_id")
        auth = f.oneof("auth", AUTHS) or "none"
        f.check()
        return Resp(200, await self.webhooks.forge(ws, claim, video_id, auth))

    async def set_limits(self, request: Request, _: dict[str, str]) -> Resp:
        """PUT /_emulator/limits {rate_per_second, rate_per_minute} (0 disables a window)."""
        ws = self._workspace(request)
        f = Fields(await self._body(request))
        rps = f.integer("rate_per_second", minimum=0)
        rpm = f.integer("rate_per_minute", minimum=0)
        f.check()
        if rps is not None:
            ws.rate_per_second = rps
        if rpm is not None:
            ws.rate_per_minute = rpm
        self.limiter.forget(ws.token)
        return Resp(200, {"rate_per_second": ws.rate_per_second, "rate_per_minute": ws.rate_per_minute})

    async def requests(self, request: Request, _: dict[str, str]) -> Resp:
        """GET /_emulator/requests?workspace_id=&since=&open=: the request log (oldest first); open=true: the
        requests received and not answered yet (status 0)."""
        query = request.query_params
        workspace_id = query.get("workspace_id")
        if workspace_id:
            workspace_id = parse_id(workspace_id)
        since_raw = query.get("since")
        try:
            since = float(since_raw) if since_raw else None
        except ValueError:
            raise validation(Invalid("since", "number", "epoch seconds")) from None
        is_open = query.get("open") == "true"
        entries = list(self.emu.answering.copy().values()) if is_open else list(self.emu.log)
        data = [
            asdict(e)
            for e in entries
            if (workspace_id is None or e.workspace_id == workspace_id) and (since is None or e.time >= since)
        ]
        return Resp(200, {"data": data})

    async def videos(self, request: Request, _: dict[str, str]) -> Resp:
        """GET /_emulator/videos: every video of the workspace with file_size and md5 of the stored bytes, and
        the reason of one in error (`message`: what only the service's webhook tells a client).

        Canonical ids and real-clock times whatever the workspace's variants (this is the test's view).
        """
        ws = self._workspace(request)
        with self.emu.lock:
            rows = list(ws.videos.values())
        data = []
        for video in rows:
            item = video_json(video, self.emu.base_url, "update")
            item["file_size"] = video.file_size
            item["md5"] = video.md5
            item["message"] = video.message
            data.append(item)
        return Resp(200, {"data": data})

    async def reset(self, request: Request, _: dict[str, str]) -> Resp:
        """POST /_emulator/reset: forget everything; the default workspace comes back with the same keys."""
        self.emu.reset()
        self.limiter.clear()
        self.on_reset()
        return Resp(200, {"reset": True})


def _variants(body: dict[str, Any]) -> Variants:
    """Variants from a control body; 400400 naming the variant or parameter that is wrong."""
    names = body.get("variants", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise validation(Invalid("variants", "type", "a list of variant names"))
    params = {k: body.get(k) for k in PARAMS}
    try:
        return make_variants(names, **params)
    except ValueError as exc:
        raise validation(Invalid("variants", "oneof", str(exc))) from None

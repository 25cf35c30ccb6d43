"""The ASGI apps of both hosts: routing, auth, rate limit, faults, X-Request-ID and the request log."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from starlette.requests import Request

from videoferry.emulator.backends.core import Emulator, LogEntry
from videoferry.emulator.errors import (
    ApiError,
    bad_token,
    injected_fault,
    internal,
    method_not_allowed,
    missing_auth,
    not_found,
    too_many_requests,
)
from videoferry.emulator.faults import NO_FAULT, FaultDecision
from videoferry.emulator.ids import parse_id, watching_ids
from videoferry.emulator.processing import Processor
from videoferry.emulator.ratelimit import SlidingWindowLimiter
from videoferry.emulator.scopes import TokenScope, require_write, scope_of
from videoferry.emulator.state import (
    EMULATOR_HEADER,
    POLL_RULE_HEADER,
    SPEC_POLL_RULE_SECONDS,
    UploadSession,
    Workspace,
)
from videoferry.emulator.variants import METHOD_SWAPS, NONE, Variants

log = logging.getLogger("videoferry.emulator.app")
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class Resp:
    """A handler's answer: status, JSON body (or raw bytes) and extra headers."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


@dataclass
class Ctx:
    """Everything a handler needs about one request."""

    request: Request
    params: dict[str, str]
    emu: Emulator
    processor: Processor
    ws: Workspace
    session: UploadSession | None = None
    scope: TokenScope | None = None  # the token's scope (None: the workspace's own token, unlimited)
    faults: FaultDecision = field(default_factory=FaultDecision)
    drop: bool = False  # set by a handler that abandons the connection (truncation fault, broken body)


Handler = Callable[[Ctx], Awaitable[Resp]]


@dataclass
class Route:
    """A path pattern, its handlers by method, and how it authenticates (token or endpoint secret)."""

    pattern: re.Pattern[str]
    methods: dict[str, Handler]
    auth: str = "token"
    #: The operations whose method the spec does not show (variants.METHOD_SWAPS) this route serves.
    operations: tuple[str, ...] = ()
    #: The path parameter naming a video whose GETs are polls (the poll-rule-429 variant), if any.
    polled: str | None = None

    def handler(self, method: str) -> Handler | None:
        """The handler for a method: its own, or the swapped-method variant's alternative (checked later)."""
        if method in self.methods:
            return self.methods[method]
        for op, default, other in METHOD_SWAPS.values():
            if op in self.operations and method == other:
                return self.methods.get(default)
        return None

    def operation_of(self, method: str) -> str | None:
        """The operation of a hidden method this method would serve here (None: a method the spec shows)."""
        for op, default, other in METHOD_SWAPS.values():
            if op in self.operations and method in (default, other):
                return op
        return None


def route(
    path: str,
    methods: dict[str, Handler],
    auth: str = "token",
    operations: tuple[str, ...] = (),
    polled: str | None = None,
) -> Route:
    """Compile a path like /v1/videos/{video_id}/copy into a Route."""
    regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)
    return Route(re.compile(f"^{regex}$"), methods, auth, operations, polled)


def token_of(header: str) -> str:
    """The token in an Authorization value: 'Bearer <token>' or the bare token."""
    value = header.strip()
    if value[:7].lower() == "bearer ":
        return value[7:].strip()
    return value


def authenticate(emu: Emulator, header: str | None) -> Workspace:
    """The workspace of an Authorization value (400 / 100101 without one, 401 / 100102 for a bad token)."""
    if header is None:
        raise missing_auth()
    ws = emu.by_token(token_of(header))
    if ws is None:
        raise bad_token()
    return ws


def hides_foreign(exc: ApiError) -> bool:
    """Whether an error says an object is missing (400404, 400236, 400400 `not exists`): such an answer
    becomes 401 / 100102 when the object belongs to another workspace (spec 5.2)."""
    if exc.code in (400404, 400236):
        return True
    return exc.code == 400400 and any(p.reason == "not exists" for p in exc.invalid_params)


def json_bytes(body: Any) -> bytes:
    """Compact JSON encoding."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


async def send_response(
    send: Send, resp: Resp, *, request_id: bool, variants: Variants = NONE, poll_rule: float | None = None
) -> None:
    """Write one response; X-Request-ID unless told not to; the Date header on the service's clock; the
    workspace's poll rule when the control API set one other than the spec's (POLL_RULE_HEADER)."""
    if resp.raw is not None:
        payload = resp.raw
        content_type = resp.headers.pop("content-type", "text/plain; charset=utf-8")
    elif resp.body is None:
        payload = b""
        content_type = ""
    else:
        payload = json_bytes(resp.body)
        content_type = "application/json"
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in resp.headers.items()]
    if content_type:
        headers.append((b"content-type", content_type.encode()))
    if resp.status not in (204, 304):
        headers.append((b"content-length", str(len(payload)).encode()))
    if request_id:
        headers.append((b"x-request-id", uuid.uuid4().hex.encode()))
    headers.append((b"date", variants.date_header().encode("latin-1")))
    headers.append((EMULATOR_HEADER, b"1"))  # who answers: the client believes emulator extras only then
    if poll_rule is not None and poll_rule != SPEC_POLL_RULE_SECONDS:
        headers.append((POLL_RULE_HEADER.encode(), f"{poll_rule:g}".encode()))
    await send({"type": "http.response.start", "status": resp.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload if resp.status not in (204, 304) else b""})


def error_resp(exc: ApiError, path: str) -> Resp:
    """An error answer with the spec's body."""
    return Resp(exc.status, exc.body(path))


async def drop_connection(send: Send) -> None:
    """Close the client's connection without any response (uvicorn's h11 cycle exposes the transport)."""
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("cannot drop this connection")
    transport.close()
    if cycle is not None and hasattr(cycle, "disconnected"):
        cycle.disconnected = True
    await asyncio.sleep(0)


#: Arrival numbers of requests (the keys of Emulator.answering).
_ARRIVALS = itertools.count(1)


class HostApp:
    """One host (API or upload): its routes behind auth, rate limit and faults; control routes bypass all."""

    def __init__(
        self,
        name: str,
        emu: Emulator,
        processor: Processor,
        limiter: SlidingWindowLimiter,
        routes: list[Route],
        control: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self.emu = emu
        self.processor = processor
        self.limiter = limiter
        self.routes = routes
        self.control = control

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if self.control is not None and path.startswith("/_emulator/"):
            await self.control(scope, receive, send)
            return
        method: str = scope["method"]
        started = time.time()
        outcome = _Outcome()
        arrival = next(_ARRIVALS)
        outcome.arrival = (arrival, LogEntry(started, self.name, method, path, 0, None, False))
        try:
            resp = await self._handle(scope, receive, send, method, path, outcome)
        except ApiError as exc:
            resp = error_resp(exc, path)
        except Exception:  # noqa: BLE001 - an emulator bug still answers like a server error
            log.exception("unhandled error on %s %s", method, path)
            resp = error_resp(internal(), path)
        finally:
            self.emu.answering.pop(arrival, None)
        if outcome.variants.names and resp.raw is None:
            resp.body = outcome.variants.shape(resp.body, method, path, resp.status)
        if outcome.drop:
            await drop_connection(send)
        else:
            await send_response(
                send,
                resp,
                request_id=resp.status not in (404, 405),
                variants=outcome.variants,
                poll_rule=outcome.poll_rule,
            )
        self.emu.record(
            LogEntry(
                started,
                self.name,
                method,
                path,
                resp.status,
                outcome.workspace_id,
                outcome.api,
                outcome.drop,
                _upload_offset(scope) if method == "PATCH" else None,
            )
        )

    async def _handle(
        self, scope: Scope, receive: Receive, send: Send, method: str, path: str, outcome: _Outcome
    ) -> Resp:
        match = None
        found: Route | None = None
        for candidate in self.routes:
            match = candidate.pattern.match(path)
            if match:
                found = candidate
                break
        if found is None or match is None:
            raise not_found("route")
        handler = found.handler(method)
        if handler is None:
            raise method_not_allowed()
        request = Request(scope, receive)
        session: UploadSession | None = None
        token_scope: TokenScope | None = None
        if found.auth == "endpoint":
            hit = self.emu.uploads.session_by_secret(match.group("secret"))
            if hit is None:
                raise not_found("upload")
            ws, session = hit
            if ws.variants.has("endpoint-expiry") and (
                time.monotonic() - session.opened > ws.variants.endpoint_ttl_seconds
            ):
                raise not_found("upload")  # the address expired
        elif found.auth == "media":
            owner = self.emu.video_owner(match.group("video_id"))  # a signed download link names no token
            if owner is None:
                raise not_found("media")
            ws = owner
        else:
            header = request.headers.get("authorization")
            ws = authenticate(self.emu, header)
            token_scope = scope_of(ws, token_of(header or ""))
        outcome.workspace_id = ws.id
        number, entry = outcome.arrival
        self.emu.answering[number] = replace(entry, workspace_id=ws.id)  # open from here to the answer
        outcome.variants = ws.variants
        outcome.poll_rule = ws.poll_rule_seconds
        operation = found.operation_of(method)
        if operation is not None and not ws.variants.method_allowed(operation, method):
            return error_resp(method_not_allowed(), path)
        faults = ws.faults.decide(method, path) if ws.faults is not None else NO_FAULT
        if faults.rate_limit:
            return _too_many()
        polled = self._polled(ws, found, match, method)
        if polled is not None and ws.polls.too_soon(polled, ws.poll_rule_seconds):
            return _too_many()  # poll-rule-429: at most one poll of a video per 5 s (spec 8); not counted
        if found.auth == "token" or ws.variants.has("tus-rate-limited"):
            if not self.limiter.try_acquire(ws.token, ws.rate_per_second, ws.rate_per_minute):
                return _too_many()
            outcome.api = True
        if polled is not None:
            ws.polls.mark(polled)
        if faults.latency_ms:
            await asyncio.sleep(faults.latency_ms / 1000.0)
        if faults.error_status:
            status = faults.error_status
            return error_resp(injected_fault(status), path)
        ctx = Ctx(
            request=request,
            params=match.groupdict(),
            emu=self.emu,
            processor=self.processor,
            ws=ws,
            session=session,
            scope=token_scope,
            faults=faults,
        )
        with watching_ids() as named:
            try:
                require_write(ctx, method)
                resp = await handler(ctx)
            except ApiError as exc:
                if hides_foreign(exc) and self.emu.foreign(ws, named):
                    exc = bad_token()  # spec 5.2: a token of another workspace is 401, not "missing"
                resp = error_resp(exc, path)
        outcome.drop = ctx.drop or faults.drop_after_commit
        return resp

    @staticmethod
    def _polled(ws: Workspace, found: Route, match: re.Match[str], method: str) -> str | None:
        """The video a GET polls when the poll-rule-429 variant is on (None otherwise)."""
        if method != "GET" or found.polled is None or not ws.variants.has("poll-rule-429"):
            return None
        return parse_id(match.group(found.polled))


@dataclass
class _Outcome:
    arrival: tuple[int, LogEntry] = (0, LogEntry(0.0, "", "", "", 0, None, False))
    workspace_id: str | None = None
    variants: Variants = NONE
    poll_rule: float | None = None
    api: bool = False
    drop: bool = False


def _upload_offset(scope: Scope) -> int | None:
    """The Upload-Offset header a request carries (a tus PATCH), None without a number there."""
    for name, value in scope.get("headers", ()):
        if name == b"upload-offset" and value.isdigit():
            return int(value)
    return None


def _too_many() -> Resp:
    return Resp(429, too_many_requests().body(""))

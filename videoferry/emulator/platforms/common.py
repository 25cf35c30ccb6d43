"""What every platform stand-in shares: its server, state, rate windows, faults, links, routes, control."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import math
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

START_TIMEOUT = 30.0
#: The control API's prefix on every stand-in (never a path of the platform it stands in for).
CONTROL = "/_standin"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer."""
    return JSONResponse(body, status_code=status, headers=headers)


@dataclass
class FixedWindow:
    """`limit` requests per key in each window of `seconds` (windows aligned on the epoch, so a reset is a
    whole second and a client that waits until it is never refused again in the same window)."""

    limit: int = 0
    seconds: float = 60.0
    _counts: dict[tuple[str, int], int] = field(default_factory=dict)

    def take(self, key: str, now: float) -> tuple[bool, int, float]:
        """(allowed, remaining, reset epoch seconds) for one request of `key` now; a limit of 0 is none."""
        window = int(now // self.seconds)
        reset = (window + 1) * self.seconds
        if self.limit <= 0:
            return True, 1_000_000, reset
        used = self._counts.get((key, window), 0)
        if used >= self.limit:
            return False, 0, reset
        self._counts[(key, window)] = used + 1
        return True, self.limit - used - 1, reset


@dataclass
class Logged:
    """One request the stand-in answered: when (epoch seconds), what, and its status."""

    at: float
    method: str
    path: str
    status: int


@dataclass
class Faults:
    """Faults the control API sets: the next `count` API requests answer `status` (a 5xx burst)."""

    status: int = 503
    count: int = 0

    def next(self) -> int | None:
        """The status the next API request answers with, if a fault is due."""
        if self.count <= 0:
            return None
        self.count -= 1
        return self.status


class Links:
    """Signed file links that expire: `expires` seconds after they are handed out, or at once after
    expire_all(). A link past its time answers 410 Gone."""

    def __init__(self, lifetime: float) -> None:
        self.lifetime = lifetime
        self._key = secrets.token_bytes(16)
        self._generation = 0

    def expire_all(self) -> None:
        """Every link handed out so far has expired."""
        self._generation += 1

    def sign(self, path: str, now: float) -> tuple[str, float]:
        """(path?query, expiry epoch) of a link to `path`."""
        expires = now + self.lifetime
        query = f"exp={int(math.ceil(expires))}&gen={self._generation}"
        sig = hmac.new(self._key, f"{path}?{query}".encode(), hashlib.sha256).hexdigest()[:32]
        return f"{path}?{query}&sig={sig}", expires

    def check(self, path: str, exp: str, gen: str, sig: str, now: float) -> int:
        """200 for a good link, 403 for a forged one, 410 for one that has expired."""
        query = f"exp={exp}&gen={gen}"
        want = hmac.new(self._key, f"{path}?{query}".encode(), hashlib.sha256).hexdigest()[:32]
        if not hmac.compare_digest(want, sig):
            return 403
        if not exp.isdigit() or not gen.isdigit() or int(exp) < now or int(gen) < self._generation:
            return 410
        return 200


def file_bytes(spec: dict[str, Any], seed: str) -> bytes:
    """A rendition's bytes: `content_b64` as seeded, else `size` deterministic bytes (default 4096)."""
    if spec.get("content_b64"):
        return base64.b64decode(spec["content_b64"])
    size = int(spec.get("size", 4096))
    block = hashlib.sha256(seed.encode()).digest()
    return (block * (size // len(block) + 1))[:size]


Handler = Callable[[Request], Awaitable[Response]]
#: An API route past its guard: (request, now in epoch seconds) -> the answer.
Endpoint = Callable[[Request, float], Awaitable[Response]]
#: A stand-in's guard (auth, rate limit, faults): the refusal a request gets, or None to let it through.
Guard = Callable[[Request, float], Response | None]


class StandinState:
    """What every stand-in's state holds: its lock, its base_url (once served), the request log, the rate
    window and the 5xx faults. Each platform's state adds its own and answers seed, configure and delete."""

    def __init__(self, window: FixedWindow | None = None) -> None:
        self.lock = threading.Lock()
        self.base_url = ""
        self.log: list[Logged] = []
        self.restart(window or FixedWindow())

    def restart(self, window: FixedWindow) -> None:
        """A fresh account's limits: `window`, no fault due, an empty log."""
        self.window = window
        self.faults = Faults()
        self.log.clear()

    def configure_limits(self, body: dict[str, Any], window: float) -> None:
        """The control API's limits: `rate_limit` requests per `rate_window` seconds (`window` by default)
        and a 5xx burst of `fault_count` answers of `fault_status` (503 by default)."""
        if "rate_limit" in body:
            self.window = FixedWindow(int(body["rate_limit"]), float(body.get("rate_window", window)))
        if "fault_count" in body:
            self.faults = Faults(status=int(body.get("fault_status", 503)), count=int(body["fault_count"]))

    def seed(self, body: dict[str, Any]) -> dict[str, Any]:
        """The control API's seed: the platform's tokens, videos and the rest (`reset` empties it first)."""
        raise NotImplementedError

    def configure(self, body: dict[str, Any]) -> dict[str, Any]:
        """The control API's config: limits, faults and the platform's own settings."""
        raise NotImplementedError

    def delete(self, ident: str) -> bool:
        """Delete one video (as its owner would); whether it was there."""
        raise NotImplementedError


class LinkedState(Protocol):
    """A stand-in's state that hands out signed file links (read at each request: a reset replaces them)."""

    lock: threading.Lock
    log: list[Logged]
    links: Links


def guarded(state: StandinState, guard: Guard, endpoint: Endpoint) -> Handler:
    """An API route: `guard` then `endpoint` under the state's lock, each answer logged (time, method,
    path, status)."""

    async def route(request: Request) -> Response:
        # The body read whole first: an endpoint awaiting it under the (thread) lock would block the event
        # loop on the next request's lock, and the server with it.
        await request.body()
        at = now()
        with state.lock:
            response = guard(request, at) or await endpoint(request, at)
            state.log.append(Logged(at, request.method, request.url.path, response.status_code))
        return response

    return route


def signed_file(
    state: LinkedState, path_of: Callable[[Request], str], serve: Callable[[Request], Response | None]
) -> Handler:
    """A file route behind a signed link: 403 for a forged link, 410 for an expired one, 404 when `serve`
    (called under the lock) finds nothing, else its answer; each request logged (GET, the path, status)."""

    async def route(request: Request) -> Response:
        path = path_of(request)
        q = request.query_params
        with state.lock:
            status = state.links.check(path, q.get("exp", ""), q.get("gen", ""), q.get("sig", ""), now())
            answer = serve(request) if status == 200 else None
            if status == 200 and answer is None:
                status = 404
            state.log.append(Logged(now(), "GET", path, answer.status_code if answer is not None else status))
        if answer is None:
            return Response(b"link expired" if status == 410 else b"not found", status_code=status)
        return answer

    return route


def standin_app(state: StandinState, routes: list[Route]) -> Starlette:
    """The stand-in's ASGI app: its platform's `routes` and the control API."""
    control = control_routes(state.seed, state.configure, state.delete, state.log, state.lock)
    return Starlette(routes=[*routes, *control])


class StandinServer:
    """A stand-in (a Starlette app) on a loopback port, served by uvicorn in a background thread; start()
    returns once it accepts connections. `base_url` is its address."""

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = 0, name: str = "standin") -> None:
        self.app = app
        self.host = host
        self.port = port
        self.name = name
        self.base_url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    def start(self) -> None:
        """Bind the port (OSError when it cannot be) and serve; RuntimeError when it does not come up."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self.base_url = f"http://{self.host}:{self.port}"
        # Idle connections are kept 30 s, as the emulator's are (server.py): past the 5 s after which an httpx
        # client drops its own idle ones. With uvicorn's default of 5 s both ends let go of an idle connection
        # at about the same moment, a known race (a request sent on it as the server closes it is answered by
        # nothing). Suspected, not reproduced, in a CI chaos run: the emulator's URL import of a stand-in
        # link, sent right after a 429's 5 s pause, failed at once and left its video in error.
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            http="h11",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, args=(sock,), name=self.name, daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT) or self._error is not None:
            self.stop()
            raise RuntimeError(f"the {self.name} stand-in did not start: {self._error!r}")

    def _run(self, sock: socket.socket) -> None:
        assert self._server is not None
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(sock))
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()
            sock.close()

    async def _serve(self, sock: socket.socket) -> None:
        assert self._server is not None
        task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started and not task.done():
            await asyncio.sleep(0.01)
        self._ready.set()
        await task

    def stop(self) -> None:
        """Stop serving (the port is free afterwards)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None

    def __enter__(self) -> StandinServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def control_routes(
    seed: Callable[[dict[str, Any]], dict[str, Any]],
    configure: Callable[[dict[str, Any]], dict[str, Any]],
    delete: Callable[[str], bool],
    log: list[Logged],
    lock: threading.Lock,
) -> list[Route]:
    """The control API every stand-in has: POST /_standin/seed (videos, folders, tokens), POST
    /_standin/config (limits, faults, link lifetime, expire links), DELETE /_standin/videos/{id}, GET
    /_standin/log (every request answered: time, method, path, status)."""

    async def seed_route(request: Request) -> Response:
        body = await request.json()
        with lock:
            return json_response(seed(body))

    async def config_route(request: Request) -> Response:
        body = await request.json()
        with lock:
            return json_response(configure(body))

    async def delete_route(request: Request) -> Response:
        with lock:
            found = delete(request.path_params["video_id"])
        return json_response({"deleted": found}, 200 if found else 404)

    async def log_route(request: Request) -> Response:
        with lock:
            entries = [vars(entry) for entry in log]
        return json_response(entries)

    return [
        Route(f"{CONTROL}/seed", seed_route, methods=["POST"]),
        Route(f"{CONTROL}/config", config_route, methods=["POST"]),
        Route(f"{CONTROL}/videos/{{video_id}}", delete_route, methods=["DELETE"]),
        Route(f"{CONTROL}/log", log_route, methods=["GET"]),
    ]


def first_line(server: StandinServer, token: str, platform: str, env: dict[str, str] | None = None) -> str:
    """The JSON line `videoferry standin` prints first: the platform, its base_url and token (and `env`, the
    other variables its client reads, when it has any)."""
    line: dict[str, Any] = {"platform": platform, "base_url": server.base_url, "token": token}
    if env:
        line["env"] = env
    return json.dumps(line)


def now() -> float:
    """The stand-ins' clock (epoch seconds: rate-limit resets and link expiries are wall-clock times)."""
    return time.time()

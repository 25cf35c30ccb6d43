"""Runs both hosts (API and upload) with uvicorn in one background thread; `serve_forever` for the CLI."""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from videoferry.emulator.app import HostApp
from videoferry.emulator.backends.core import Emulator
from videoferry.emulator.processing import Processor
from videoferry.emulator.ratelimit import SlidingWindowLimiter
from videoferry.emulator.routes_api import api_routes
from videoferry.emulator.routes_control import ControlApp
from videoferry.emulator.routes_extra import extra_api_routes, extra_upload_routes
from videoferry.emulator.routes_upload import upload_routes
from videoferry.emulator.variants import make_variants

START_TIMEOUT = 30.0


class PortUnavailableError(ValueError):
    """A port of the emulator cannot be listened on (taken, or not allowed); the message names it."""


def _bind(host: str, port: int, role: str, option: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only for sockets that name it.
    # Without it every answer on a kept-alive connection waited ~40 ms for a delayed ACK (Nagle), which no
    # real HTTP server does.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(512)
    except OSError as exc:
        sock.close()
        why = "is already in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
        raise PortUnavailableError(
            f"port {port} on {host} (the {role}) {why}; choose another with {option} (0 picks a free one)"
        ) from None
    sock.setblocking(False)
    return sock


def _url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


class EmulatorServer:
    """The emulator as a threaded in-process server: start() returns once both hosts accept connections."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        upload_port: int = 0,
        *,
        data_dir: Path | None = None,
        rate_per_second: int = 10,
        rate_per_minute: int = 300,
        processing: str = "immediate",
        processing_seconds: float = 0.0,
        variants: Sequence[str] = (),
    ) -> None:
        default_variants = make_variants(variants)  # ValueError naming an unknown name, before side effects
        self.host = host
        self.port = port
        self.upload_port = upload_port
        self._own_dir = data_dir is None
        self.data_dir = (
            Path(tempfile.mkdtemp(prefix="videoferry-emulator-")) if data_dir is None else Path(data_dir)
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.emu = Emulator(
            self.data_dir,
            rate_per_second=rate_per_second,
            rate_per_minute=rate_per_minute,
            processing=processing,
            processing_seconds=processing_seconds,
        )
        self.emu.default_variants = default_variants
        self.limiter = SlidingWindowLimiter()
        self.base_url = ""
        self.upload_url = ""
        self.default: dict[str, Any] = {}
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._servers: list[uvicorn.Server] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None

    def _seed_default(self) -> None:
        d = self.default
        ws = self.emu.create_workspace(
            token=d.get("token"),
            workspace_id=d.get("workspace_id"),
            project_id=d.get("project_id"),
            folder_id=d.get("folder_id"),
        )
        self.default = self.emu.workspace_info(ws)

    def start(self) -> None:
        """Bind both ports, seed the default workspace and serve in a background thread.

        PortUnavailableError (a ValueError naming the port and the option to change) when a port is taken.
        """
        if self._thread is not None:
            return
        try:
            api_sock = _bind(self.host, self.port, "API host", "--port")
            try:
                upload_sock = _bind(self.host, self.upload_port, "upload host", "--upload-port")
            except PortUnavailableError:
                api_sock.close()
                raise
        except PortUnavailableError:
            self.stop()  # the temporary data directory goes too
            raise
        self.port, self.upload_port = api_sock.getsockname()[1], upload_sock.getsockname()[1]
        self.base_url, self.upload_url = _url(self.host, self.port), _url(self.host, self.upload_port)
        self.emu.base_url, self.emu.upload_url = self.base_url, self.upload_url
        self._seed_default()
        self._thread = threading.Thread(
            target=self._run, args=(api_sock, upload_sock), name="emulator", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT) or self._error is not None:
            self.stop()
            raise RuntimeError(f"the emulator did not start: {self._error!r}")

    def _run(self, api_sock: socket.socket, upload_sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(api_sock, upload_sock))
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()
            api_sock.close()
            upload_sock.close()

    async def _serve(self, api_sock: socket.socket, upload_sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        processor = Processor(self.emu, loop)
        processor.start()
        control = ControlApp(self.emu, self.limiter, self._seed_default, processor.webhooks)
        apps = [
            (HostApp("api", self.emu, processor, self.limiter, api_routes() + extra_api_routes(), control),
             api_sock),
            (HostApp("upload", self.emu, processor, self.limiter, upload_routes() + extra_upload_routes()),
             upload_sock),
        ]
        tasks = []
        for app, sock in apps:
            config = uvicorn.Config(
                app,
                interface="asgi3",
                lifespan="off",
                http="h11",
                log_level="warning",
                access_log=False,
                proxy_headers=False,
                server_header=False,
                date_header=False,  # app.send_response writes Date (on the service's clock under variants)
                timeout_graceful_shutdown=2,
                timeout_keep_alive=30,
            )
            server = uvicorn.Server(config)
            self._servers.append(server)
            tasks.append(asyncio.create_task(server.serve(sockets=[sock])))
        while not all(s.started for s in self._servers):
            if any(t.done() for t in tasks):
                break
            await asyncio.sleep(0.01)
        self._ready.set()
        try:
            await asyncio.gather(*tasks)
        finally:
            await processor.close()

    def stop(self) -> None:
        """Stop both hosts and background work; remove the data directory when it was a temporary one."""
        for server in self._servers:
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self._servers = []
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmulatorServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve_forever(host: str, port: int, upload_port: int, variants: Sequence[str] = ()) -> None:
    """Serve until interrupted; the first stdout line is the default workspace as JSON."""
    server = EmulatorServer(host, port, upload_port, variants=variants)
    server.start()
    print(json.dumps(server.default), flush=True)
    print(
        f"emulator: API {server.base_url}, uploads {server.upload_url}; Ctrl+C stops",
        file=sys.stderr,
        flush=True,
    )
    stopped = threading.Event()
    try:
        while server._thread is not None and server._thread.is_alive() and not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()

"""Webhook receiver: media.update.status events become claims to confirm; HTTP Basic beyond loopback."""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import json
import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from videoferry.connectors.config import ConfigError
from videoferry.connectors.ids import try_normal_id

__all__ = [
    "STATUS_EVENT",
    "USERNAME_ENV",
    "PASSWORD_ENV",
    "WebhookClaim",
    "WebhookConfigError",
    "WebhookReceiver",
    "check_listen",
    "describe_shape",
    "is_loopback",
    "parse_listen",
    "parse_status_event",
]

log = logging.getLogger(__name__)

STATUS_EVENT = "media.update.status"
MAX_BODY = 1 << 20
#: Longest description of an unknown payload's shape given to on_invalid.
MAX_DESCRIPTION = 300
USERNAME_ENV = "VIDEOFERRY_WEBHOOK_USERNAME"
PASSWORD_ENV = "VIDEOFERRY_WEBHOOK_PASSWORD"

EventCallback = Callable[[str, str, "str | None"], None]


class WebhookConfigError(ConfigError):
    """The receiver cannot start as configured (names --webhook-listen and the variables to set): exit 2."""


@dataclass(frozen=True)
class WebhookClaim:
    """What one webhook says: the service (or anyone who can reach the receiver) claims this status.

    Not a fact: confirm a done/error claim against the service (one list call covers many videos) before the
    ledger believes it. `received_at` is this machine's UTC time of arrival.
    """

    video_id: str
    status: str
    reason: str | None
    received_at: datetime


def is_loopback(host: str) -> bool:
    """Whether `host` is only reachable from this machine: 127.0.0.0/8, ::1 or localhost."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other name (or "", every interface) may be reachable from elsewhere


def parse_listen(listen: str) -> tuple[str, int]:
    """HOST:PORT (an IPv6 host in brackets; no host: 127.0.0.1) -> (host, port); WebhookConfigError if not."""
    host, sep, port_text = listen.strip().rpartition(":")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not sep or not 0 <= port <= 65535:
        raise WebhookConfigError(f"--webhook-listen {listen!r} is not HOST:PORT (e.g. 127.0.0.1:8099)")
    return host.strip("[]") or "127.0.0.1", port


def check_listen(host: str, username: str | None, password: str | None) -> None:
    """Refuse a receiver that anyone could post to: beyond loopback it needs HTTP Basic credentials.

    Raises WebhookConfigError naming --webhook-listen and the variables; credentials half given are refused
    everywhere (a username without a password would be a credential anyone can guess).
    """
    if bool(username) != bool(password):
        raise WebhookConfigError(
            f"set both {USERNAME_ENV} and {PASSWORD_ENV} for the webhook receiver (only one of them is set)"
        )
    if not username and not is_loopback(host):
        raise WebhookConfigError(
            f"--webhook-listen {host or '0.0.0.0'} listens beyond this machine: set {USERNAME_ENV} and "
            f"{PASSWORD_ENV} (HTTP Basic credentials the service sends), or listen on 127.0.0.1"
        )


class WebhookReceiver:
    """Serve POST webhooks on ``host:port`` (port 0 = a free one) in a background thread.

    Each media.update.status event becomes a WebhookClaim in a thread-safe queue: ``drain()`` takes what has
    arrived (the caller confirms done/error claims against the service before believing them). The same
    claim again (same video, status and reason) is counted in ``duplicates``; it is not queued while an
    equal one still waits, and is queued again once that one was drained (the first may have been forged or
    early). ``on_event(video_id, status, message)``, when given, is called for every claim instead of
    queueing it (from the request's thread; an exception answers 500).

    Beyond loopback the receiver refuses to start without credentials (WebhookConfigError, at construction).
    With username/password set, a request without matching HTTP Basic credentials gets 401 (compared in
    constant time; counted in ``unauthorised``). Anything else that arrives (another event type, a shape we
    do not know, a body that is not JSON) is answered 200, so the sender does not retry it, counted in
    ``invalid_events`` and described to ``on_invalid(description)`` (its keys, never its values).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        username: str | None = None,
        password: str | None = None,
        on_event: EventCallback | None = None,
        on_invalid: Callable[[str], None] | None = None,
    ) -> None:
        check_listen(host, username, password)
        self.host = host
        self._port = port
        self._credentials = (username.encode(), password.encode()) if username and password else None
        self.on_event = on_event
        #: Called (from the request's thread, no argument) after a claim was queued: a caller waiting for
        #: claims can look at once instead of at its next round. Set by that caller; an exception is logged.
        self.on_claim: Callable[[], None] | None = None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.on_invalid = on_invalid
        self._count_lock = threading.Lock()
        self._claims: queue.SimpleQueue[WebhookClaim] = queue.SimpleQueue()
        self._seen: set[tuple[str, str, str | None]] = set()
        self._pending: set[tuple[str, str, str | None]] = set()
        self.received = 0
        #: Payloads of another event type (also counted in invalid_events).
        self.ignored = 0
        #: media.update.status payloads understood / not understood (a service may send another shape).
        self.valid_events = 0
        self.invalid_events = 0
        #: Claims that arrived again (same video, status and reason): counted; queued again only once drained.
        self.duplicates = 0
        #: Requests refused with 401 (no or wrong credentials).
        self.unauthorised = 0

    @classmethod
    def from_listen(
        cls,
        listen: str,
        *,
        env: Mapping[str, str] | None = None,
        on_event: EventCallback | None = None,
        on_invalid: Callable[[str], None] | None = None,
    ) -> WebhookReceiver:
        """A receiver for --webhook-listen HOST:PORT, credentials from VIDEOFERRY_WEBHOOK_USERNAME/_PASSWORD.

        Raises WebhookConfigError (exit 2) for a malformed address or a receiver beyond loopback without
        credentials. Not started: call start() (or use it as a context manager).
        """
        source = os.environ if env is None else env
        host, port = parse_listen(listen)
        username = source.get(USERNAME_ENV) or None
        password = source.get(PASSWORD_ENV) or None
        return cls(host, port, username=username, password=password, on_event=on_event, on_invalid=on_invalid)

    @property
    def port(self) -> int:
        """The bound port (after start())."""
        if self._server is None:
            return self._port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The address to register with the service (no credentials in it)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self) -> None:
        """Bind and serve in a daemon thread; returns once the socket accepts connections."""
        if self._server is not None:
            return
        server_class = _IPv6Server if ":" in self.host else ThreadingHTTPServer
        server = server_class((self.host, self._port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="webhook-receiver", daemon=True
        )
        self._thread.start()
        log.info("webhook receiver listening on %s", self.url)

    def stop(self) -> None:
        """Stop serving and close the socket (claims not drained yet stay drainable)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=10)
        self._server = None
        self._thread = None

    def __enter__(self) -> WebhookReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        auth = "basic" if self._credentials else "none"
        return f"WebhookReceiver(host={self.host!r}, port={self.port}, auth={auth})"

    def drain(self, timeout: float = 0.0, limit: int | None = None) -> list[WebhookClaim]:
        """The claims received since the last drain, oldest first (at most `limit`).

        With `timeout` > 0 it waits up to that many seconds for the first claim when none is waiting (a bound,
        not a poll: it returns as soon as one arrives); then it takes what else is there without waiting.
        """
        claims: list[WebhookClaim] = []
        deadline = time.monotonic() + max(timeout, 0.0)
        while limit is None or len(claims) < limit:
            wait = deadline - time.monotonic() if not claims else 0.0
            try:
                claim = self._claims.get(timeout=wait) if wait > 0 else self._claims.get_nowait()
            except queue.Empty:
                break
            with self._count_lock:
                self._pending.discard((claim.video_id, claim.status, claim.reason))
            claims.append(claim)
        return claims

    # -- request handling (called from handler threads)

    def _authorised(self, header: str | None) -> bool:
        if self._credentials is None:
            return True
        scheme, _, value = (header or "").partition(" ")
        try:
            decoded = base64.b64decode(value.strip().encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            decoded = b""
        username, _, password = decoded.partition(b":")
        # Both parts compared in constant time, whatever the first one says (no early exit).
        same_user = hmac.compare_digest(username, self._credentials[0])
        same_password = hmac.compare_digest(password, self._credentials[1])
        return scheme.lower() == "basic" and same_user & same_password

    def _refused(self) -> None:
        with self._count_lock:
            self.unauthorised += 1

    def _handle(self, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._invalid("not JSON")
        if not isinstance(payload, dict):
            return self._invalid(f"a JSON {type(payload).__name__}, not an object")
        kind = payload.get("event", payload.get("type"))
        if kind is not None and kind != STATUS_EVENT:
            with self._count_lock:
                self.ignored += 1
            return self._invalid("another event type; " + describe_shape(payload))
        parsed = parse_status_event(payload)
        if parsed is None:
            return self._invalid(describe_shape(payload))
        video_id, status, message = parsed
        queued = False
        with self._count_lock:
            self.received += 1
            self.valid_events += 1
            if parsed in self._seen:
                self.duplicates += 1
            self._seen.add(parsed)
            # A claim equal to one still waiting is not queued twice. One already drained is queued again: the
            # caller may have found the first untrue (sent before the service got there, or forged) and this
            # one may be the service's own.
            if self.on_event is None and parsed not in self._pending:
                self._pending.add(parsed)
                self._claims.put(WebhookClaim(video_id, status, message, datetime.now(UTC)))
                queued = True
        if self.on_event is None:
            if queued and self.on_claim is not None:
                try:
                    self.on_claim()
                except Exception:
                    log.exception("the claim callback failed")
            return 200, {"ok": True}
        try:
            self.on_event(video_id, status, message)
        except Exception:
            log.exception("webhook handler failed for video %s (status %s)", video_id, status)
            return 500, {"error": "handler failed"}
        return 200, {"ok": True}

    def _invalid(self, shape: str) -> tuple[int, dict[str, Any]]:
        """Count a payload we do not use, tell on_invalid (keys only, never values), answer 200.

        200, not 4xx: a sender retries a refused webhook, and the same payload would be refused again.
        """
        with self._count_lock:
            self.invalid_events += 1
        if self.on_invalid is not None:
            try:
                self.on_invalid(shape)
            except Exception:
                log.exception("on_invalid failed")
        return 200, {"ignored": True}


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def parse_status_event(payload: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """(video id, status, message) from a media.update.status payload of any shape we know, else None.

    Shapes (the spec does not show one): {"event", "data": {"id", "status", "message"?}} (the emulator's),
    {"type", "object": {"media_id", "status", "reason"?}}, and a flat {"id" | "media_id" | "video_id",
    "status", "message" | "reason"?}. Ids come back in the one normal form.
    """
    for inner in (payload.get("data"), payload.get("object"), payload):
        if not isinstance(inner, dict):
            continue
        ids = [inner[k] for k in ("id", "media_id", "video_id") if isinstance(inner.get(k), str)]
        video_id = ids[0] if ids else None
        status = inner.get("status")
        if not video_id or not isinstance(status, str) or not status:
            continue
        message = payload.get("message", inner.get("message", inner.get("reason")))
        if message is not None and not isinstance(message, str):
            message = json.dumps(message)
        return try_normal_id(video_id) or video_id, status, message
    return None


def describe_shape(payload: dict[str, Any]) -> str:
    """The keys of a payload and of its nested objects (values are never shown: they may be secrets)."""
    parts = []
    for key, value in payload.items():
        if isinstance(value, dict):
            parts.append(f"{key}{{{', '.join(sorted(map(str, value)))}}}")
        else:
            parts.append(str(key))
    text = "keys: " + ", ".join(sorted(parts))
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


def _make_handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "videoferry-webhook"
        sys_version = ""

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            if not receiver._authorised(self.headers.get("Authorization")):
                receiver._refused()
                self._reply(401, {"error": "unauthorised"}, {"WWW-Authenticate": 'Basic realm="videoferry"'})
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._reply(411, {"error": "Content-Length required"})
                return
            if length < 0 or length > MAX_BODY:
                self._reply(413, {"error": "body too large"})
                return
            body = self.rfile.read(length)
            status, answer = receiver._handle(body)
            self._reply(status, answer)

        def do_GET(self) -> None:  # noqa: N802
            self._reply(405, {"error": "POST only"}, {"Allow": "POST"})

        do_PUT = do_GET  # noqa: N815
        do_PATCH = do_GET  # noqa: N815
        do_DELETE = do_GET  # noqa: N815

        def _reply(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            # The request line carries no credentials, but keep access logs at debug level and
            # never include headers.
            log.debug("webhook %s - %s", self.address_string(), format % args)

    return Handler

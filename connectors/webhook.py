"""A small threaded receiver for the service's media.update.status webhooks (optional HTTP Basic)."""

from __future__ import annotations

import base64
import hmac
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from connectors.ids import try_normal_id

log = logging.getLogger(__name__)

STATUS_EVENT = "media.update.status"
MAX_BODY = 1 << 20
#: Longest description of an unknown payload's shape given to on_invalid.
MAX_DESCRIPTION = 300

EventCallback = Callable[[str, str, str | None], None]


class WebhookReceiver:
    """Serve POST webhooks on ``host:port`` (port 0 = a free one) in a background thread.

    ``on_event(video_id, status, message)`` is called for every media.update.status event, from the
    request's thread (``valid_events`` counts them). With username/password set, a request without matching
    HTTP Basic credentials gets 401. Anything else that arrives (another event type, a shape we do not
    know, a body that is not JSON) is answered 200, so the sender does not retry it, counted in
    ``invalid_events`` and described to ``on_invalid(description)`` once per payload (its keys, never its
    values).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        username: str | None = None,
        password: str | None = None,
        on_event: EventCallback,
        on_invalid: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self._port = port
        self._expected_auth = _basic_token(username, password) if username is not None else None
        self.on_event = on_event
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.on_invalid = on_invalid
        self._count_lock = threading.Lock()
        self.received = 0
        #: Payloads of another event type (also counted in invalid_events).
        self.ignored = 0
        #: media.update.status payloads understood / not understood (a service may send another shape).
        self.valid_events = 0
        self.invalid_events = 0

    @property
    def port(self) -> int:
        """The bound port (after start())."""
        if self._server is None:
            return self._port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The address to register with the service (no credentials in it)."""
        return f"http://{self.host}:{self.port}/"

    def start(self) -> None:
        """Bind and serve in a daemon thread; returns once the socket accepts connections."""
        if self._server is not None:
            return
        server = ThreadingHTTPServer((self.host, self._port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="webhook-receiver", daemon=True
        )
        self._thread.start()
        log.info("webhook receiver listening on %s", self.url)

    def stop(self) -> None:
        """Stop serving and close the socket."""
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
        auth = "basic" if self._expected_auth else "none"
        return f"WebhookReceiver(host={self.host!r}, port={self.port}, auth={auth})"

    # -- request handling (called from handler threads)

    def _authorised(self, header: str | None) -> bool:
        if self._expected_auth is None:
            return True
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        return hmac.compare_digest(value.strip().encode(), self._expected_auth.encode())

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
        with self._count_lock:
            self.received += 1
            self.valid_events += 1
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


def _basic_token(username: str, password: str | None) -> str:
    return base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")


def _make_handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "videoferry-webhook"
        sys_version = ""

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            if not receiver._authorised(self.headers.get("Authorization")):
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

"""The transport: the one place requests are built and sent (auth, limiter, retries, errors, clock)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from typing import Any, Self

import httpx

from videoferry.connectors.client.emulated import is_loopback, says_emulator
from videoferry.connectors.client.network import describe_network_failure, host_of
from videoferry.connectors.client.poll_pacing import POLL_RULE_HEADER, PollRule
from videoferry.connectors.client.silence import Silence
from videoferry.connectors.clock import ServiceClock
from videoferry.connectors.error_table import error_from_response
from videoferry.connectors.errors import (
    InvalidRequestError,
    MethodNotAllowedError,
    ResponseFormatError,
    TransportError,
    UnknownOutcomeError,
    VideoApiError,
)
from videoferry.connectors.limiter import ApiRateLimiter, rate_limiter
from videoferry.connectors.methods import MethodBook
from videoferry.connectors.redact import install_httpx_redaction
from videoferry.connectors.retry import CallKind, RetryPolicy, run_with_retries
from videoferry.connectors.tls import tls_context

__all__ = ["Transport", "BodyFactory", "ErrorHook"]

log = logging.getLogger(__name__)

#: Builds a request body anew for every attempt (a stream can be read only once).
BodyFactory = Callable[[], bytes | Iterable[bytes]]
#: The setting that holds each host's address, named in a refused / DNS / TLS failure.
_SETTINGS = {"api": "VIDEOFERRY_API_URL / --api-url", "upload": "VIDEOFERRY_UPLOAD_URL / --upload-url"}
#: Called with an attempt's error and the attempt's number; a response it returns counts as the answer.
ErrorHook = Callable[[VideoApiError, int], httpx.Response | None]
#: Methods that only read: every other request may change the service, and passes the send guard first.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Transport:
    """HTTP for both hosts: every attempt passes the rate limiter, feeds the clock, and learns methods.

    Resource modules (connectors/client/videos.py, uploads.py, ...) describe a call and hand it to `call`;
    nothing else builds a request. Thread-safe: one pooled httpx.Client per host. Retries follow the call
    kind (connectors/README.md): idempotent calls are retried on 5xx/network/429; creates and in-place
    edits only when the failure provably happened before sending (or on 429), otherwise
    UnknownOutcomeError is raised for the ledger.
    """

    def __init__(
        self,
        api_url: str,
        upload_url: str,
        token: str,
        *,
        limiter: ApiRateLimiter | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        max_connections: int = 32,
        auth_scheme: str | None = "Bearer",
        http_transport: httpx.BaseTransport | None = None,
        outage: float | None = None,
    ) -> None:
        if not token:
            raise ValueError("token must not be empty (set VIDEOFERRY_TOKEN)")
        install_httpx_redaction()
        self.api_url = api_url.rstrip("/")
        self.upload_url = upload_url.rstrip("/")
        self.limiter = limiter if limiter is not None else rate_limiter(token)
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_connections = max_connections
        #: The service's clock, learned from the Date header of every answer (one per client).
        self.clock = ServiceClock()
        #: How long the service has answered nothing, bounded by `outage` seconds (None: each attempt's
        #: own timeout only): every attempt's timeout is drawn from what is left of it (silence.Silence).
        self.silence = Silence(outage)
        #: The service's poll rule (the spec's 5 s unless the emulator states another: poll_pacing.PollRule).
        self.poll_rule = PollRule()
        #: Whether the API host is videoferry's emulator (a loopback address whose answers say so:
        #: connectors/client/emulated.py); only then are its extras (a stated poll rule, /_emulator/ calls)
        #: believed or called. Learned from the answers; False until one says so.
        self.emulator = False
        self._on_loopback = is_loopback(self.api_url)
        #: Called immediately before a request that may change the service is sent (after the limiter admitted
        #: it, since admission can wait); what it raises refuses the request unsent: a remote ledger's lease
        #: that may have ended (flows/job.py sets it; tus uploads of this transport pass it too).
        self.send_guard: Callable[[], None] | None = None
        #: Seconds the guard will still let such requests go unless the lease is renewed (None: no limit),
        #: for senders in other processes that cannot call the guard (tasks/migrate/byte_plane.py's workers).
        self.send_window: Callable[[], float | None] = lambda: None
        self._methods = MethodBook()
        self._connect_timeout = min(timeout, 10.0)
        timeouts = httpx.Timeout(timeout, connect=self._connect_timeout)
        pool = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        # The spec leaves the scheme unnamed; "Bearer <token>" unless the value already names a scheme.
        authorization = token if " " in token.strip() or not auth_scheme else f"{auth_scheme} {token}"
        headers = {"Authorization": authorization, "Accept": "application/json", "User-Agent": "videoferry"}
        self._api, self._upload = (
            httpx.Client(
                base_url=url,
                headers=headers,
                timeout=timeouts,
                limits=pool,
                transport=http_transport,
                verify=tls_context(),
            )
            for url in (self.api_url, self.upload_url)
        )

    def close(self) -> None:
        """Close both connection pools (the limiter is shared and stays open)."""
        self._api.close()
        self._upload.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(api_url={self.api_url!r}, upload_url={self.upload_url!r})"

    def methods(self) -> dict[str, str]:
        """operation -> HTTP method in use, for the operations whose method the spec does not show."""
        return self._methods.snapshot()

    def guard_send(self) -> None:
        """Call the send guard (if any): right before a request that may change the service leaves."""
        guard = self.send_guard
        if guard is not None:
            guard()

    # -- one attempt ----------------------------------------------------------------------------------

    def _attempt(
        self,
        http: httpx.Client,
        method: str,
        path: str,
        *,
        operation: str,
        params: Mapping[str, Any] | None,
        json_body: Any,
        headers: Mapping[str, bytes] | None,
        body: BodyFactory | None,
    ) -> httpx.Response:
        # The call holds its slot from admission until its answer (or error) is back, and counts from then.
        timeout = self.silence.timeout(self.timeout, operation)  # ServiceSilentError: not sent, not counted
        with self.limiter.admitted():
            if method.upper() not in READ_METHODS:
                self.guard_send()  # after admission (it can wait), as late before sending as we can
                timeout = self._within_window(timeout)
            sent, started = datetime.now(UTC), time.monotonic()
            try:
                response = http.request(
                    method,
                    path,
                    params=params,
                    json=json_body,
                    headers=[(name.encode("ascii"), value) for name, value in (headers or {}).items()],
                    content=body() if body is not None else None,
                    timeout=httpx.Timeout(timeout, connect=min(timeout, self._connect_timeout)),
                )
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                raise InvalidRequestError(
                    f"request could not be sent ({type(exc).__name__})", operation=operation
                ) from None
            except httpx.TransportError as exc:
                error = self._network_error(exc, http, operation, timeout)
                self.silence.no_answer(started, error.message)
                raise error from None
        self.silence.answered()
        self.clock.observe_date_header(sent, datetime.now(UTC), response.headers.get("date"))
        if http is self._api and self._on_loopback and says_emulator(response):
            self.emulator = True
        if self.emulator:  # any other server: the spec's rule is the rule, whatever it states
            self.poll_rule.learn(response.headers.get(POLL_RULE_HEADER))
        if response.status_code == 429:
            self.limiter.pause()
        if not response.is_success:
            raise error_from_response(response, operation=operation)
        log.debug(
            "%s %s -> %s request_id=%s",
            operation,
            method,
            response.status_code,
            response.headers.get("x-request-id"),
        )
        return response

    def _within_window(self, timeout: float) -> float:
        """A change's timeout, cut to the seconds the send guard still allows (a remote ledger's lease): its
        answer is lost, at the latest, by the time another run may take the ledger, whose lookups then give
        it the settle time (tasks/gap.Gap.listable_at)."""
        window = self.send_window()
        return timeout if window is None else max(min(timeout, window), 0.001)

    def _network_error(
        self, exc: httpx.TransportError, http: httpx.Client, operation: str, timeout: float
    ) -> TransportError:
        """A TransportError naming the host and what failed (the attempt had `timeout` seconds); for refused /
        DNS / TLS, the setting to check."""
        # Connect errors provably happened before anything was sent (so did a wait for a pooled connection).
        sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        if isinstance(exc, httpx.ConnectTimeout):
            timeout = min(timeout, self._connect_timeout)
        try:
            url = exc.request.url
        except RuntimeError:  # raised without its request
            url = http.base_url
        failure, words = describe_network_failure(exc, url, timeout=timeout)
        if failure in ("refused", "dns", "tls"):
            setting = _SETTINGS["api" if http is self._api else "upload"]
            words += f" (is {setting} right?)"
        return TransportError(
            words,
            sent=sent,
            timed_out=isinstance(exc, httpx.TimeoutException),
            operation=operation,
            host=host_of(url),
            failure=failure,
        )

    # -- one call -------------------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        operation: str,
        kind: CallKind,
        host: str = "api",
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, bytes] | None = None,
        body: BodyFactory | None = None,
        on_error: ErrorHook | None = None,
        text: bool = False,
        pace: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> Any:
        """One API call with retries; returns the decoded JSON body (None for an empty body).

        `operation` names the call in errors, logs and the method book; `kind` says what may be repeated;
        `host` is "api" ({base_url}) or "upload" ({upload_url}); `headers` are ASCII names with bytes values;
        `body` builds the raw body anew for each attempt; `on_error(error, attempt)` may turn an attempt's
        error into an answer (a response it returns counts as the answer); `text=True` returns the answer's
        text as it is instead (CSV and plain-text downloads). `pace()`, when given, is entered around every
        attempt (a retry included): the spec's poll rule for GETs of one video (videos.get).

        For an operation whose method the spec does not show (methods.PLAUSIBLE), `method` is only the
        fallback: the learned method is sent, and a 405 is sent once more with the other plausible one (a
        405 means nothing was done, so this is safe for creates); the one that worked is kept.
        """
        http = self._api if host == "api" else self._upload
        current = self._methods.method(operation, method)
        refused = False

        def send(verb: str) -> httpx.Response:
            return self._attempt(
                http,
                verb,
                path,
                operation=operation,
                params=params,
                json_body=json_body,
                headers=headers,
                body=body,
            )

        def attempt(number: int) -> httpx.Response:
            with pace() if pace is not None else nullcontext():
                return paced(number)

        def paced(number: int) -> httpx.Response:
            nonlocal current, refused
            try:
                try:
                    response = send(current)
                except MethodNotAllowedError:
                    other = self._methods.other(operation, current)
                    if other is None or refused:
                        raise  # the spec shows this method, or both plausible ones were refused
                    refused, current = True, other
                    response = send(current)
                if refused:
                    self._methods.learn(operation, current)
                return response
            except VideoApiError as exc:
                if on_error is not None:
                    substitute = on_error(exc, number)
                    if substitute is not None:
                        return substitute
                raise

        response = run_with_retries(attempt, kind=kind, policy=self.retry, sleep=self.silence.sleep)
        if text:
            return response.text
        if not response.content or not response.content.strip():
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            error = ResponseFormatError(
                "answer is not JSON",
                status=response.status_code,
                request_id=response.headers.get("x-request-id"),
                operation=operation,
            )
            if kind is CallKind.IDEMPOTENT:
                raise error from None
            raise UnknownOutcomeError(
                "answer is not JSON",
                cause_kind="bad_response",
                status=response.status_code,
                request_id=error.request_id,
                operation=operation,
            ) from None

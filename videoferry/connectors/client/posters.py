"""Live event posters (spec 4.2, /v2/poster on the upload host): set an event's poster from an image URL."""

from __future__ import annotations

import logging
import threading

import httpx

from videoferry.connectors.client.live_models import LiveEvent
from videoferry.connectors.client.live_support import read_one, redacting, segment
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import MethodNotAllowedError, ResponseFormatError
from videoferry.connectors.models import Poster
from videoferry.connectors.retry import CallKind

__all__ = ["Posters", "Poster"]

log = logging.getLogger(__name__)

#: The spec does not show the method of /v2/poster: the first is tried, the other after a 405.
METHODS = ("POST", "PUT")


def _ascii_header(value: str, what: str) -> bytes:
    """A header value as ASCII; an address with other characters is sent IDNA/percent-encoded."""
    text = value.strip()
    if not text:
        raise ValueError(f"{what} must not be empty")
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:
        pass
    try:
        return str(httpx.URL(text)).encode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError):
        raise ValueError(f"{what} is not an address that can be sent in a header") from None


class Posters:
    """POST (or PUT, learned from a 405) {upload_url}/v2/poster with X-Event-ID and X-Poster-URL.

    The service fetches the image behind the URL; the event's poster links then change. The URL may be a
    signed link: it is never logged and is blanked in the service's error messages. Setting the same image
    again leaves the same end state, so the call is retried like an idempotent one.
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._method = METHODS[0]
        self._lock = threading.Lock()

    def upload(self, event_id: str, poster_url: str) -> Poster:
        """Set the event's poster from an http(s) image address; the new poster.

        Refusals (unknown event, unreachable URL, not an image) are ValidationError (400400) naming the
        header in invalid_params. An answer without a poster is followed by one GET of the event.
        """
        headers = {
            "X-Event-ID": _ascii_header(event_id, "event_id"),
            "X-Poster-URL": _ascii_header(poster_url, "poster_url"),
        }
        with self._lock:
            method = self._method

        def send(verb: str) -> object:
            return self._transport.call(
                verb,
                "/v2/poster",
                operation="upload_poster",
                kind=CallKind.IDEMPOTENT,
                host="upload",
                headers=headers,
                on_error=redacting([poster_url, headers["X-Poster-URL"].decode("ascii")]),
            )

        try:
            body = send(method)
        except MethodNotAllowedError:
            other = METHODS[1] if method == METHODS[0] else METHODS[0]
            body = send(other)  # a 405 means nothing was done: safe to send once more
            with self._lock:
                self._method = other
            log.info("the service takes %s for upload_poster (learned from a 405)", other)
        data = body.get("data") if isinstance(body, dict) else None
        if isinstance(data, dict) and any(data.get(size) for size in ("original", "md", "sm", "xs")):
            return read_one(body, Poster, "upload_poster")
        event = read_one(
            self._transport.call(
                "GET",
                f"/v2/live/events/{segment(event_id, 'event_id')}",
                operation="get_live_event",
                kind=CallKind.IDEMPOTENT,
            ),
            LiveEvent,
            "get_live_event",
        )
        if event.poster is None:
            raise ResponseFormatError("no poster in the answer or the event", operation="upload_poster")
        return event.poster

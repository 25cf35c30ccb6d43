"""What every platform client shares: its own rate limits (never the target's), retries of 5xx and lost
connections with backoff, errors that say what to fix, and the records a listing yields."""

from __future__ import annotations

import email.utils
import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self
from urllib.parse import urljoin

import httpx
from pyrate_limiter import Duration, Limiter, Rate

from connectors.config import ConfigError
from core.redact import safe_uri

log = logging.getLogger(__name__)

#: The longest a client waits for a platform's rate limit to reset before it stops (seconds).
MAX_PAUSE = 900.0


class PlatformConfigError(ConfigError):
    """A platform's settings to fix before anything is listed (token, scopes, plan, folder): exit status 2."""


class PlatformError(Exception):
    """A platform call that did not succeed (gone, 5xx after every retry, an unexpected answer)."""


class PlatformUnavailable(PlatformError):
    """The platform did not answer, or answered 5xx, after every retry: the source is gone for now."""


class StillProcessing(PlatformError):
    """The video is still being uploaded or transcoded at the platform: a later run takes it."""


class MalformedPage(PlatformError):
    """A listing page whose shape is not the platform's: the message names the page and the field."""


class NotFoundError(PlatformError):
    """The platform answered 404 for what was asked (a video deleted since the listing, an unknown folder)."""


@dataclass(frozen=True)
class Backoff:
    """How 5xx answers and lost connections are retried: `attempts` in all, waits doubling from `initial`
    up to `most` seconds, with full jitter."""

    attempts: int = 6
    initial: float = 0.5
    most: float = 30.0

    def wait(self, attempt: int) -> float:
        return random.uniform(0, min(self.most, self.initial * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class Chapter:
    """One chapter: its start in seconds and its title."""

    time: float
    title: str


@dataclass(frozen=True)
class SourceVideo:
    """One video as a platform's listing shows it: its stable id and the metadata an inventory carries."""

    platform: str
    id: str
    title: str
    description: str | None = None
    tags: tuple[str, ...] = ()
    chapters: tuple[Chapter, ...] | None = None
    #: The service's privacy_type where the platform's maps onto it (anywhere / nowhere), else None.
    privacy_type: str | None = None
    #: The platform's own privacy setting, as it says it.
    source_privacy: str | None = None
    folder: str | None = None
    folder_id: str | None = None
    source_url: str | None = None
    created: str | None = None
    #: Seconds, as the listing says (None: not said).
    duration: float | None = None
    #: Bytes of the file a migration would take (the original, else the largest MP4), when the listing
    #: shows it (Vimeo's `download` sizes need the video_files scope; Wistia's asset fileSize).
    size: int | None = None
    #: The other ids the platform's player, stream and image URLs name this video by (Mux's playback ids,
    #: public first, then signed: not secrets, a signed one plays only with a token), as keys `mux:<id>`.
    player_ids: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The item's identity: `<platform>:<its id>` (a later migrate resumes by it)."""
        return f"{self.platform}:{self.id}"


@dataclass(frozen=True)
class DownloadLink:
    """Where one video's file can be fetched now: the original, else the best progressive MP4.

    `url` is a secret (a signed link): never shown; `expires` is when the platform says it stops working."""

    url: str = field(repr=False)
    original: bool
    label: str
    width: int | None = None
    height: int | None = None
    size: int | None = None
    expires: datetime | None = None

    def describe(self) -> str:
        """Which file this is, as a report says it (never the link)."""
        shape = f" {self.width}x{self.height}" if self.width and self.height else ""
        if self.original:
            return f"original file ({self.label}{shape})"
        return f"progressive MP4 {self.label}{shape} (the platform offers no original file)"


def parse_time(text: str | None) -> float | None:
    """Epoch seconds of a rate-limit reset: Unix seconds, ISO 8601, or an HTTP date; None if unreadable."""
    if not text:
        return None
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return None


class PlatformClient:
    """HTTP to one platform: bearer token, its own rate limits (an optional cap of `per_minute` calls, the
    pause its headers or a 429 ask for), 5xx and lost connections retried with backoff, answers as JSON."""

    platform = "platform"
    #: The environment variable of the token, named in errors.
    token_variable = "VIDEOFERRY_PLATFORM_TOKEN"
    url_variable = "VIDEOFERRY_PLATFORM_API_URL"

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        per_minute: int | None = None,
        backoff: Backoff = Backoff(),
        max_pause: float = MAX_PAUSE,
        timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.backoff = backoff
        self.max_pause = max_pause
        self._cap = Limiter(Rate(per_minute, Duration.MINUTE)) if per_minute else None
        self._not_before = 0.0
        self._http = httpx.Client(
            timeout=timeout,
            headers={**self.auth_headers(token), **(headers or {})},
            follow_redirects=False,
        )
        self.calls = 0

    def auth_headers(self, token: str) -> dict[str, str]:
        """The headers that carry the token (a bearer token; platforms with another scheme override)."""
        return {"Authorization": f"Bearer {token}"}

    def close(self) -> None:
        """Close the connections and stop the cap's leak thread (pyrate's; it ends within its interval)."""
        self._http.close()
        if self._cap is not None:
            self._cap.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, path: str) -> str:
        """An absolute address on the platform's API host (paths such as Vimeo's `paging.next` included)."""
        return urljoin(self.base_url + "/", path.lstrip("/"))

    # -- rate limits: the platform's own -------------------------------------------------------------------

    def _pace(self) -> None:
        if self._cap is not None:
            self._cap.try_acquire(self.platform)
        pause = self._not_before - time.time()
        if pause > self.max_pause:
            raise PlatformError(
                f"{self.platform}'s rate limit resets in {pause:.0f} s (more than {self.max_pause:.0f} s):"
                " run again later"
            )
        if pause > 0:
            log.info("%s: waiting %.1f s for its rate limit to reset", self.platform, pause)
            time.sleep(pause)

    def pause_until(self, epoch: float) -> None:
        """No call to the platform before `epoch` (its rate limit said so)."""
        self._not_before = max(self._not_before, epoch)

    def note_limits(self, answer: httpx.Response) -> None:
        """What an answer says about the rate limit (subclasses read their platform's headers)."""
        if answer.status_code == 429:
            retry_after = parse_time(answer.headers.get("Retry-After"))
            if retry_after is not None and retry_after < 1e9:  # seconds, not a date
                retry_after += time.time()
            self.pause_until(retry_after if retry_after is not None else time.time() + self.backoff.most)

    # -- calls ---------------------------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, Any] | None = None, *, what: str) -> httpx.Response:
        """GET `path` (a path or absolute URL on the API host): the 2xx answer. Waits for the platform's rate
        limit, retries 429, 5xx and lost connections (bounded); raises PlatformConfigError for 401 / 403,
        NotFoundError for 404, PlatformError otherwise. `what` names the call in messages."""
        return self.call("GET", path, params, what=what)

    def call(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        body: Any = None,
        what: str,
    ) -> httpx.Response:
        """A request as get() makes it, of any method, with an optional JSON `body`. Only for calls that
        are safe to repeat on the platform (reads, and requests such as "prepare a download" that the
        platform treats as idempotent): 5xx and lost connections are retried."""
        address = self.url(path)
        refused = 0
        attempt = 0
        while True:
            attempt += 1
            self._pace()
            try:
                answer = self._http.request(method, address, params=params, json=body)
            except httpx.TransportError as exc:
                if attempt >= self.backoff.attempts:
                    raise PlatformUnavailable(
                        f"{self.platform} at {safe_uri(self.base_url)} does not answer ({type(exc).__name__})"
                        f" after {attempt} tries, while reading {what}: check {self.url_variable}, or run"
                        " again later"
                    ) from None
                time.sleep(self.backoff.wait(attempt))
                continue
            self.calls += 1
            self.note_limits(answer)
            status = answer.status_code
            if status == 429:
                refused += 1
                attempt -= 1  # a 429 is a wait, not a failure; its own bound below
                if refused > self.backoff.attempts * 4:
                    raise PlatformError(f"{self.platform} refused {refused} calls in a row (429) for {what}")
                continue
            if status >= 500:
                if attempt >= self.backoff.attempts:
                    raise PlatformUnavailable(
                        f"{self.platform} answered {status} {attempt} times for {what}: run again later"
                    )
                time.sleep(self.backoff.wait(attempt))
                continue
            if status in (401, 403):
                raise self.refused(status, _message(answer), what)
            if status == 404:
                raise NotFoundError(f"{self.platform} has no {what} (404)")
            if status >= 400:
                raise PlatformError(f"{self.platform} answered {status} for {what}: {_message(answer)}")
            return answer

    def refused(self, status: int, message: str, what: str) -> PlatformConfigError:
        """The error a 401 / 403 is: the token to fix."""
        return PlatformConfigError(
            f"{self.platform} refused the token ({self.token_variable}) reading {what} ({status}: {message})"
        )

    def get_json(self, path: str, params: Mapping[str, Any] | None = None, *, what: str) -> Any:
        """GET as get(), the body as JSON (MalformedPage naming `what` when it is not)."""
        answer = self.get(path, params, what=what)
        try:
            return answer.json()
        except ValueError:
            raise MalformedPage(f"{what}: the answer is not JSON") from None


def _message(answer: httpx.Response) -> str:
    """The platform's own error text, cut short (never a header: the token stays out)."""
    try:
        body = answer.json()
    except ValueError:
        return answer.text[:200]
    if isinstance(body, dict):
        return str(body.get("error") or body.get("developer_message") or body)[:200]
    return str(body)[:200]


def need(value: Any, kind: type | tuple[type, ...], where: str, field_name: str) -> Any:
    """`value` when it is of `kind`, else MalformedPage naming the page (`where`) and the field."""
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        shown = repr(value)[:80]
        raise MalformedPage(f"{where}, field {field_name}: expected {names}, got {shown}")
    return value


def environment_settings(
    env: Mapping[str, str], token_variable: str, url_variable: str, default_url: str
) -> tuple[str, str]:
    """(API address, token) from the environment; PlatformConfigError naming the variable when unset."""
    token = env.get(token_variable, "").strip()
    if not token:
        raise PlatformConfigError(f"{token_variable} is not set: export the platform's API token in it")
    url = env.get(url_variable, "").strip() or default_url
    if not url.startswith(("http://", "https://")):
        raise PlatformConfigError(f"{url_variable} must be an http(s) address, not {safe_uri(url)!r}")
    return url, token

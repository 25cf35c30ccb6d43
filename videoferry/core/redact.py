"""The one set of redaction rules: secret-named keys, signed URLs, upload endpoints and AWS signatures."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: A key whose lower-cased name contains one of these holds a secret: dropped from anything stored or shown.
SECRET_KEY_PARTS: tuple[str, ...] = (
    "token",
    "password",
    "secret",
    "endpoint",
    "authorization",
    "credential",
    "api_key",
    "access_key",
    "stream_key",
    "restream_key",
)
#: Longest message text kept (journal, reports).
MAX_MESSAGE = 2000
#: What a known secret string is replaced with.
PLACEHOLDER = "<redacted>"
#: Paths of plain API calls (safe to log). Any other path (an upload endpoint) is logged as its origin only.
API_PATH = re.compile(r"^/(v1/|v2/(init|video|poster)$|v2/live/|_emulator/)")

_URL_TAIL_RE = re.compile(
    r"""(\b[A-Za-z][A-Za-z0-9+.-]*://)(?:[^\s/?#@"'`]*@)?([^\s?#"'`]*)(?:[?#][^\s"'`]*)?"""
)
_AWS_SECRET_RE = re.compile(
    r"(?i)(x-amz-security-token|x-amz-signature|x-amz-credential|signature|credential|authorization)"
    r"(['\"]?\s*[:=]\s*b?['\"]?\n?)([^&\s'\",;}]+)"
)


def is_secret_key(name: str) -> bool:
    """Whether a parameter name looks like it holds a secret."""
    lowered = name.lower()
    return any(part in lowered for part in SECRET_KEY_PARTS)


def sanitize(value: Any) -> Any:
    """A copy of value with every secret-named mapping key dropped, at any depth."""
    if isinstance(value, Mapping):
        return {str(k): sanitize(v) for k, v in value.items() if not is_secret_key(str(k))}
    if isinstance(value, list | tuple):
        return [sanitize(v) for v in value]
    return value


def blank(text: str, secrets: Iterable[str | None], placeholder: str = PLACEHOLDER) -> str:
    """text with each known secret string replaced by a placeholder."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, placeholder)
    return text


def scrub(text: str, secrets: Iterable[str | None], placeholder: str = PLACEHOLDER) -> str:
    """blank(), then cut to MAX_MESSAGE characters (messages the journal and reports keep)."""
    text = blank(text, secrets, placeholder)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def safe_uri(uri: str) -> str:
    """A source as it may be shown: URLs lose user info, query string and fragment; paths and s3 stay."""
    if "://" not in uri or uri.startswith(("s3://", "file://")):
        return uri
    try:
        parts = urlsplit(uri)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
    except ValueError:
        return uri.split("?", 1)[0].split("#", 1)[0]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def scrub_urls(text: str) -> str:
    """Remove user info, query strings and fragments from every URL inside free text."""
    return _URL_TAIL_RE.sub(r"\1\2", text)


def log_url(url: object) -> str:
    """A request URL as it may be logged: API paths in full, any other path as "<upload endpoint>"."""
    try:
        parts = urlsplit(str(url))
        origin = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        return "<url>"
    if not parts.scheme or not parts.hostname:
        return "<url>"
    if API_PATH.match(parts.path):
        return str(url)
    return f"{origin}/<upload endpoint>"


def scrub_aws(text: str) -> str:
    """Blank the values of signatures, credentials, session tokens and Authorization headers in a text."""
    return _AWS_SECRET_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}<redacted>", text)

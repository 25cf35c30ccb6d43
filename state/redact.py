"""Keep secrets out of what the ledger journals: drop secret-named keys, blank known secret strings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# A key whose lower-cased name contains one of these is dropped from run params, summaries and op params.
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
MAX_MESSAGE = 2000


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


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """text with each known secret string replaced by a placeholder, cut to MAX_MESSAGE characters."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<upload endpoint>")
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."

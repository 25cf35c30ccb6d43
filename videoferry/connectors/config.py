"""Connection settings from the environment (VIDEOFERRY_*); the token never appears in repr or str."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = [
    "ConfigError",
    "Settings",
    "DEFAULT_RATE_PER_SECOND",
    "DEFAULT_RATE_PER_MINUTE",
    "DEFAULT_TIMEOUT",
    "DEFAULT_CHUNK_SIZE",
    "POLL_RULE_SECONDS",
]

DEFAULT_RATE_PER_SECOND = 10
DEFAULT_RATE_PER_MINUTE = 300
DEFAULT_TIMEOUT = 30.0
#: The spec's poll rule (section 8): at most one request polling a video per 5 seconds. The client never GETs
#: one video twice sooner (connectors/client/videos.py), and every job's --poll-interval is at least this.
POLL_RULE_SECONDS = 5.0
#: tus chunk size: the first PATCH's body, and the next one's after a failed PATCH; while the link holds, each
#: PATCH doubles up to 128 MiB (connectors/tus_chunks.py), since each costs a round trip (bench/README.md
#: `throughput`). A local file is streamed in 1 MiB blocks whatever the chunk; an S3 source or a download
#: link is read chunk after chunk from one GET kept open (one 1 MiB block per transfer in memory;
#: connectors/held_stream.py).
DEFAULT_CHUNK_SIZE = 16 * 1024 * 1024

_ENV = {
    "api_url": "VIDEOFERRY_API_URL",
    "upload_url": "VIDEOFERRY_UPLOAD_URL",
    "token": "VIDEOFERRY_TOKEN",
    "rate_per_second": "VIDEOFERRY_RATE_PER_SECOND",
    "rate_per_minute": "VIDEOFERRY_RATE_PER_MINUTE",
    "timeout": "VIDEOFERRY_TIMEOUT",
    "limiter_url": "VIDEOFERRY_LIMITER_URL",
}
_REQUIRED = ("api_url", "upload_url", "token")


class ConfigError(ValueError):
    """Settings are missing or malformed; the message names the environment variable to fix."""


@dataclass(frozen=True)
class Settings:
    """Where the service is and how hard we may call it.

    limiter_url selects the shared rate-limiter backend: None or "memory" (one process),
    "sqlite:///path/to/file.db" (several processes on one machine), "redis://host:port/db" (several machines).
    """

    api_url: str
    upload_url: str
    token: str = field(repr=False)
    rate_per_second: int = DEFAULT_RATE_PER_SECOND
    rate_per_minute: int = DEFAULT_RATE_PER_MINUTE
    timeout: float = DEFAULT_TIMEOUT
    limiter_url: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in _REQUIRED:
            if not getattr(self, name):
                raise ConfigError(f"{_ENV[name]} is not set")
        for name in ("api_url", "upload_url"):
            value: str = getattr(self, name)
            if not value.startswith(("http://", "https://")):
                raise ConfigError(f"{_ENV[name]} must be an http(s) URL")
            object.__setattr__(self, name, value.rstrip("/"))
        if self.rate_per_second < 1 or self.rate_per_minute < 1:
            raise ConfigError("VIDEOFERRY_RATE_PER_SECOND and VIDEOFERRY_RATE_PER_MINUTE must be at least 1")
        if self.timeout <= 0:
            raise ConfigError("VIDEOFERRY_TIMEOUT must be positive")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read VIDEOFERRY_* variables; keyword overrides (e.g. from CLI options) win when not None."""
        source = os.environ if env is None else env
        values: dict[str, Any] = {}
        for name, var in _ENV.items():
            raw = source.get(var)
            if raw is not None and raw.strip() != "":
                values[name] = raw.strip()
        for name, value in overrides.items():
            if name not in _ENV:
                raise TypeError(f"unknown setting {name!r}")
            if value is not None:
                values[name] = value
        missing = [_ENV[name] for name in _REQUIRED if not values.get(name)]
        if missing:
            raise ConfigError(f"missing configuration: set {', '.join(missing)}")
        for name, conv in (("rate_per_second", int), ("rate_per_minute", int), ("timeout", float)):
            if name in values:
                try:
                    values[name] = conv(values[name])
                except (TypeError, ValueError):
                    raise ConfigError(f"{_ENV[name]} must be a number") from None
        return cls(**values)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "token":
                shown.append(f"token={'<set>' if value else '<unset>'}")
            elif f.name == "limiter_url":
                # Only the scheme: a redis URL may carry a password.
                shown.append(f"limiter={value.split(':', 1)[0] if value else 'memory'!r}")
            else:
                shown.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    __str__ = __repr__

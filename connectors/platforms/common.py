"""What the six source-platform clients share beyond base.py: their own call cap and the environment read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from connectors.platforms.base import PlatformClient, environment_settings


class SourceClient(PlatformClient):
    """A platform client built from the environment: the token and API address (`token_variable`,
    `url_variable`, else `default_url`), the platform's own cap of calls a minute unless one is given, and
    the other settings `settings_from_env` reads."""

    #: The platform's API address when `url_variable` is not set.
    default_url = ""
    #: The platform's own cap of calls a minute (None: only the pauses its answers ask for).
    rate_per_minute: int | None = None

    def __init__(self, base_url: str, token: str, **options: Any) -> None:
        if self.rate_per_minute is not None:
            options.setdefault("per_minute", self.rate_per_minute)
        super().__init__(base_url, token, **options)

    @classmethod
    def from_env(cls, env: Mapping[str, str], **options: Any) -> Self:
        """The client the environment describes (PlatformConfigError naming a variable to set)."""
        url, token = environment_settings(env, cls.token_variable, cls.url_variable, cls.default_url)
        return cls(url, token, **cls.settings_from_env(env), **options)

    @classmethod
    def settings_from_env(cls, env: Mapping[str, str]) -> dict[str, Any]:
        """The client's settings beyond token and API address that the environment gives (none here;
        PlatformConfigError naming a variable when one is missing or wrong)."""
        return {}


def listed_seconds(value: Any) -> float | None:
    """A duration as a listing says it (seconds, a number above 0), else None (not said: Cloudflare's -1
    while it is unknown, a missing or malformed field): only shown and compared by check, never trusted."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)

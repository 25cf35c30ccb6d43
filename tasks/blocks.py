"""Prefect blocks holding the service's and the source platforms' credentials, and the variables they fill."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, ClassVar

from prefect.blocks.core import Block
from pydantic import Field, SecretStr

from connectors.config import ConfigError

__all__ = [
    "BLOCK_VARIABLES",
    "CredentialsBlock",
    "VideoferryCredentials",
    "VimeoCredentials",
    "WistiaCredentials",
    "environment_with_blocks",
]


class CredentialsBlock(Block):
    """What every credentials block of videoferry does: fill the environment variables it stands for."""

    #: The environment variable of each field (the token's, the addresses').
    variables: ClassVar[dict[str, str]] = {}

    def environment(self) -> dict[str, str]:
        """The variables this block stands for, with its values (the token's in clear: never log this)."""
        values: dict[str, str] = {}
        for name, variable in self.variables.items():
            value: Any = getattr(self, name)
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            if value is not None and str(value).strip():
                values[variable] = str(value).strip()
        return values


class VideoferryCredentials(CredentialsBlock):
    """The video service's API token (a secret) and its API and upload addresses."""

    _block_type_name = "Videoferry Credentials"
    _block_type_slug = "videoferry-credentials"
    _description = "The video service's API token and its API and upload addresses, for every videoferry job."
    variables: ClassVar[dict[str, str]] = {
        "token": "VIDEOFERRY_TOKEN",
        "api_url": "VIDEOFERRY_API_URL",
        "upload_url": "VIDEOFERRY_UPLOAD_URL",
    }

    token: SecretStr = Field(description="The service's API token (Authorization: Bearer).")
    api_url: str = Field(description="The service's API address ({base_url}).")
    upload_url: str = Field(description="The service's upload address ({upload_url}).")


class VimeoCredentials(CredentialsBlock):
    """A Vimeo source's API token (a secret) and, when not api.vimeo.com, its API address."""

    _block_type_name = "Videoferry Vimeo Credentials"
    _block_type_slug = "videoferry-vimeo-credentials"
    _description = "A Vimeo account's API token, for videoferry's vimeo: sources."
    variables: ClassVar[dict[str, str]] = {
        "token": "VIDEOFERRY_VIMEO_TOKEN",
        "api_url": "VIDEOFERRY_VIMEO_API_URL",
    }

    token: SecretStr = Field(description="The Vimeo API token.")
    api_url: str | None = Field(default=None, description="The API address (default: api.vimeo.com).")


class WistiaCredentials(CredentialsBlock):
    """A Wistia source's API token (a secret) and, when not api.wistia.com, its API address."""

    _block_type_name = "Videoferry Wistia Credentials"
    _block_type_slug = "videoferry-wistia-credentials"
    _description = "A Wistia account's API token, for videoferry's wistia: sources."
    variables: ClassVar[dict[str, str]] = {
        "token": "VIDEOFERRY_WISTIA_TOKEN",
        "api_url": "VIDEOFERRY_WISTIA_API_URL",
    }

    token: SecretStr = Field(description="The Wistia API token.")
    api_url: str | None = Field(default=None, description="The API address (default: api.wistia.com).")


#: The environment variable naming a block of each kind (a name is no secret: a deployment's env may hold it).
BLOCK_VARIABLES: dict[str, type[CredentialsBlock]] = {
    "VIDEOFERRY_CREDENTIALS_BLOCK": VideoferryCredentials,
    "VIDEOFERRY_VIMEO_BLOCK": VimeoCredentials,
    "VIDEOFERRY_WISTIA_BLOCK": WistiaCredentials,
}


def environment_with_blocks(env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """The environment with what the blocks the BLOCK_VARIABLES name hold (read from the Prefect API in use),
    for the variables the environment does not set itself (a variable set wins, as always). The values go
    into this copy only, never into os.environ, a parameter or a log. ConfigError naming the variable and the
    block when one cannot be read."""
    env = os.environ if env is None else env
    filled: dict[str, str] | None = None
    for variable, kind in BLOCK_VARIABLES.items():
        name = env.get(variable, "").strip()
        if not name:
            continue
        wanted = [v for v in kind.variables.values() if not env.get(v, "").strip()]
        if not wanted:
            continue  # every variable the block stands for is set: they win, nothing to read
        try:
            block: Any = kind.load(name)  # synchronous here (no event loop runs this)
        except Exception as exc:  # missing, another kind of block, or the Prefect API unreachable
            raise ConfigError(
                f"{variable}={name}: the Prefect block could not be read as {kind._block_type_slug}"
                f" ({type(exc).__name__}); create it (prefect block register -m videoferry.blocks, then the"
                " UI's Blocks page) or set its variables"
            ) from None
        if not isinstance(block, CredentialsBlock):
            raise ConfigError(f"{variable}={name}: not a {kind._block_type_slug} block")
        values = block.environment()
        filled = dict(env) if filled is None else filled
        filled.update({v: values[v] for v in wanted if v in values})
    return env if filled is None else filled

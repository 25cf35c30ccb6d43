"""A run's service client with its rate limiter, kept where restarted runs share the budget; the settings of
the service from the environment (the token from VIDEOFERRY_TOKEN or a Prefect Secret block)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connectors.client import VideoClient
from connectors.config import ConfigError, Settings
from connectors.ledger_remote import default_workdir, is_remote_ledger
from connectors.limiter import ApiRateLimiter, rate_limiter
from tasks.stop import outage_seconds

#: The rate limiter's default store: a run restarted right after a crash (or a second run with ledgers in the
#: same directory) shares the budget and the 429 pause with the runs before it.
LIMITER_FILE = "videoferry-limiter.db"
#: The environment variable naming the Prefect Secret block that holds the API token.
TOKEN_BLOCK_VAR = "VIDEOFERRY_TOKEN_BLOCK"
TOKEN_VAR = "VIDEOFERRY_TOKEN"
#: The environment variables naming a credentials block (tasks.blocks.BLOCK_VARIABLES; read lazily,
#: since the blocks import Prefect).
BLOCK_VARIABLE_NAMES = ("VIDEOFERRY_CREDENTIALS_BLOCK", "VIDEOFERRY_VIMEO_BLOCK", "VIDEOFERRY_WISTIA_BLOCK")


def limiter_folder(ledger: str | os.PathLike[str]) -> Path:
    """Where a run's default limiter store is: beside a local ledger file; for a remote ledger (s3://) in
    the working folder (connectors.ledger_remote.default_workdir), shared by the machine's remote ledgers."""
    if is_remote_ledger(ledger):
        return default_workdir()
    return Path(ledger).expanduser().resolve().parent


def run_limiter(settings: Settings, ledger: str | os.PathLike[str]) -> ApiRateLimiter:
    """The rate limiter of a run on `ledger` (a --ledger value): VIDEOFERRY_LIMITER_URL when set, else a
    SQLite file in limiter_folder(ledger).

    An in-process limiter would forget the calls of a run killed a moment ago: its successor would start with
    a full budget while the service still counts them (and would ignore a 429 pause the killed run was in).
    """
    url = settings.limiter_url
    if not url:
        folder = limiter_folder(ledger)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / LIMITER_FILE
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        url = f"sqlite://{path}"
    return rate_limiter(
        settings.token, url=url, per_second=settings.rate_per_second, per_minute=settings.rate_per_minute
    )


def preview_client(settings: Settings, ledger: str | os.PathLike[str]) -> VideoClient:
    """The client of a dry run on `ledger`: its calls count against the run's rate budget when there is one
    (VIDEOFERRY_LIMITER_URL, which every client honours, or the store an earlier run left beside the ledger),
    so a dry run started while or just after a run goes does not draw a 429 for both; with neither it counts
    in this process only, and writes no file."""
    if (limiter_folder(ledger) / LIMITER_FILE).exists():
        return run_client(settings, ledger)
    return VideoClient.from_settings(settings, outage=outage_seconds())


def run_client(settings: Settings, ledger: str | os.PathLike[str]) -> VideoClient:
    """The client of a run on `ledger` (a --ledger value): its calls count against the run's rate limiter;
    the service answering nothing is bounded by VIDEOFERRY_OUTAGE_SECONDS (tasks/stop.outage_seconds)."""
    return VideoClient.from_settings(settings, limiter=run_limiter(settings, ledger), outage=outage_seconds())


def blocks_env(env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """The environment with what the credentials blocks it names hold, for the variables it does not set
    (tasks.blocks.environment_with_blocks; Prefect imported only when a block is named)."""
    env = os.environ if env is None else env
    if not any(env.get(variable, "").strip() for variable in BLOCK_VARIABLE_NAMES):
        return env
    from tasks.blocks import environment_with_blocks

    return environment_with_blocks(env)


def token_env(env: Mapping[str, str] | None = None) -> Mapping[str, str]:
    """The environment with the API token and addresses: the variables when set, else what the blocks
    VIDEOFERRY_CREDENTIALS_BLOCK etc. name hold (tasks.blocks.environment_with_blocks), else for the
    token the value of the Prefect Secret block VIDEOFERRY_TOKEN_BLOCK names (read from the Prefect API in
    use; the values go into this copy of the environment only, never into os.environ, a parameter or a log).
    ConfigError when a block cannot be read.
    """
    env = blocks_env(env)
    block = env.get(TOKEN_BLOCK_VAR, "").strip()
    if env.get(TOKEN_VAR) or not block:
        return env
    from prefect.blocks.system import Secret

    try:
        secret: Any = Secret.load(block)
        value = secret.get()
    except Exception as exc:  # the block is missing, not a Secret, or the Prefect API is unreachable
        raise ConfigError(
            f"{TOKEN_BLOCK_VAR}={block}: the Prefect Secret block could not be read ({type(exc).__name__}); "
            f"create it (prefect block create secret) or set {TOKEN_VAR}"
        ) from None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{TOKEN_BLOCK_VAR}={block}: the Secret block holds no token (a non-empty string)")
    return {**env, TOKEN_VAR: value.strip()}


def service_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """The service's settings from the environment (Settings.from_env), the token from VIDEOFERRY_TOKEN or
    the Prefect Secret block VIDEOFERRY_TOKEN_BLOCK names (token_env)."""
    return Settings.from_env(token_env(env), **overrides)

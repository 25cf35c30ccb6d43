"""Whether a Prefect server is configured (PREFECT_API_URL or the active profile), read without Prefect."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path


def configured_api_url(env: Mapping[str, str] | None = None) -> str | None:
    """The Prefect API URL a run of this process would use: PREFECT_API_URL when set, else the active
    profile's (PREFECT_PROFILE, else the profiles file's `active`; the file at PREFECT_PROFILES_PATH, else
    PREFECT_HOME/profiles.toml, else ~/.prefect/profiles.toml); None when neither names one (Prefect would
    then start a temporary server). Read with tomllib: importing Prefect for this costs a second."""
    env = os.environ if env is None else env
    url = env.get("PREFECT_API_URL", "").strip()
    if url:
        return url
    home = Path(env.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    path = Path(env.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    active = env.get("PREFECT_PROFILE") or profiles.get("active") or "ephemeral"
    profile = profiles.get("profiles", {}).get(active, {})
    value = profile.get("PREFECT_API_URL") if isinstance(profile, dict) else None
    return value.strip() or None if isinstance(value, str) else None

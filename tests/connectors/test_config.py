"""Settings from VIDEOFERRY_* variables; the token never shows in repr or str."""

from __future__ import annotations

import pytest

from videoferry.connectors.config import ConfigError, Settings

ENV = {
    "VIDEOFERRY_API_URL": "http://127.0.0.1:8080/",
    "VIDEOFERRY_UPLOAD_URL": "http://127.0.0.1:8081",
    "VIDEOFERRY_TOKEN": "sekrit-token-value",
}


def test_from_env_reads_and_normalises() -> None:
    s = Settings.from_env({**ENV, "VIDEOFERRY_RATE_PER_SECOND": "4", "VIDEOFERRY_RATE_PER_MINUTE": "100"})
    assert s.api_url == "http://127.0.0.1:8080"
    assert s.upload_url == "http://127.0.0.1:8081"
    assert s.token == "sekrit-token-value"
    assert (s.rate_per_second, s.rate_per_minute, s.timeout) == (4, 100, 30.0)


def test_token_is_never_shown() -> None:
    s = Settings.from_env({**ENV, "VIDEOFERRY_LIMITER_URL": "redis://:pw@127.0.0.1:6379/0"})
    for text in (repr(s), str(s), f"{s}"):
        assert "sekrit" not in text
        assert "pw@" not in text
        assert "token=<set>" in text


def test_missing_variables_are_named() -> None:
    with pytest.raises(ConfigError, match="VIDEOFERRY_TOKEN"):
        Settings.from_env({k: v for k, v in ENV.items() if k != "VIDEOFERRY_TOKEN"})
    with pytest.raises(ConfigError, match="VIDEOFERRY_API_URL"):
        Settings.from_env({"VIDEOFERRY_TOKEN": "t", "VIDEOFERRY_UPLOAD_URL": "http://127.0.0.1:1"})


def test_overrides_win_and_bad_values_are_rejected() -> None:
    s = Settings.from_env(ENV, token="other", rate_per_second=None)
    assert s.token == "other" and s.rate_per_second == 10
    with pytest.raises(ConfigError, match="VIDEOFERRY_RATE_PER_SECOND"):
        Settings.from_env({**ENV, "VIDEOFERRY_RATE_PER_SECOND": "fast"})
    with pytest.raises(ConfigError, match="http"):
        Settings.from_env({**ENV, "VIDEOFERRY_API_URL": "ftp://x"})
    with pytest.raises(ConfigError):
        Settings.from_env({**ENV, "VIDEOFERRY_RATE_PER_MINUTE": "0"})

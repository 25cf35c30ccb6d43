"""Unique codes (4.7): batch rules, list, get, CSV download, delete, unique_codes_enabled (3.2)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest


@pytest.fixture()
def event_id(api: httpx.Client) -> str:
    answer = api.post(
        "/v2/live/events", json={"name": "show", "type": "recurring", "privacy_share": {"password": "pw"}}
    )
    return str(answer.json()["data"]["id"])


def _today(days: int = 0) -> str:
    return (datetime.now(UTC).date() + timedelta(days=days)).isoformat()


def _create(api: httpx.Client, event_id: str, **body: Any) -> httpx.Response:
    return api.post(
        f"/v2/live/events/{event_id}/unique-codes", json={"name": "batch", "codes_amount": 3, **body}
    )


def test_create_fields_and_event_flag(api: httpx.Client, event_id: str) -> None:
    answer = _create(
        api, event_id, max_count=5, sessions_per_code=2, starts_at=_today(1), expires_at=_today(2)
    )
    assert answer.status_code == 201, answer.text
    batch = answer.json()["data"]
    assert batch["entity_id"] == event_id
    assert (batch["codes_count"], batch["used_count"], batch["max_count"], batch["sessions_per_code"]) == (
        3,
        0,
        5,
        2,
    )
    assert batch["starts_at"].startswith(f"{_today(1)}T00:00:00")
    assert batch["expires_at"].startswith(f"{_today(2)}T00:00:00")
    event = api.get(f"/v2/live/events/{event_id}").json()["data"]
    assert event["unique_codes_enabled"] is True
    # 3.2 resets privacy_share on an event create/update sending unique_codes_enabled true, not on a batch.
    assert event["privacy_share"] == {"password": "pw"}
    plain = _create(api, event_id, name="plain").json()["data"]
    assert "max_count" not in plain and "sessions_per_code" not in plain
    assert plain["starts_at"].startswith(f"{_today()}T00:00:00") and plain["expires_at"] is None


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ({"name": None}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"codes_amount": None}, "codes_amount"),
        ({"codes_amount": 0}, "codes_amount"),
        ({"codes_amount": 10000}, "codes_amount"),
        ({"max_count": 0}, "max_count"),
        ({"max_count": 10000}, "max_count"),
        ({"sessions_per_code": 101}, "sessions_per_code"),
        ({"starts_at": "2020-01-01"}, "starts_at"),
        ({"starts_at": "01/02/2030"}, "starts_at"),
        ({"expires_at": "2020-01-01"}, "expires_at"),
    ],
)
def test_rules(api: httpx.Client, event_id: str, body: dict[str, Any], name: str) -> None:
    sent = {"name": "batch", "codes_amount": 3, **body}
    answer = api.post(
        f"/v2/live/events/{event_id}/unique-codes", json={k: v for k, v in sent.items() if v is not None}
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == 400400
    assert [p["name"] for p in error["invalid_params"]] == [name]


def test_expiry_before_start_and_name_taken(api: httpx.Client, event_id: str) -> None:
    answer = _create(api, event_id, starts_at=_today(3), expires_at=_today(2))
    assert answer.json()["error"]["invalid_params"][0]["name"] == "expires_at"
    assert _create(api, event_id, name="x" * 255).status_code == 201
    assert _create(api, event_id, name="same").status_code == 201
    taken = _create(api, event_id, name="same")
    assert taken.status_code == 400 and taken.json()["error"]["code"] == 400203
    assert (
        _create(api, event_id, codes_amount=9999).json()["error"]["invalid_params"][0]["name"]
        == "codes_amount"
    )


def test_download_csv(api: httpx.Client, event_id: str) -> None:
    limited = _create(api, event_id, name="a", max_count=7).json()["data"]
    base = f"/v2/live/events/{event_id}/unique-codes"
    answer = api.get(f"{base}/{limited['id']}/download")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    lines = answer.text.splitlines()
    assert lines[0] == "sep=,"
    assert lines[1] == "Code,Activation Date,Times Used,Usage Limit"
    assert len(lines) == 5
    codes = [line.split(",") for line in lines[2:]]
    assert all(re.fullmatch(r"[A-Z]{3}[0-9]{3}", row[0]) for row in codes)
    assert all(row[1:] == ["", "0", "7"] for row in codes)
    assert len({row[0] for row in codes}) == 3
    unlimited = _create(api, event_id, name="b").json()["data"]
    text = api.get(f"{base}/{unlimited['id']}/download").text.splitlines()
    assert text[1] == "Code,Activation Date,Times Used"
    assert all(line.count(",") == 2 for line in text[1:])


def test_list_get_delete_turns_the_flag_off(api: httpx.Client, event_id: str) -> None:
    base = f"/v2/live/events/{event_id}/unique-codes"
    first = _create(api, event_id, name="one").json()["data"]
    second = _create(api, event_id, name="two").json()["data"]
    listed = api.get(base, params={"per_page": 1}).json()
    assert listed["meta"]["pagination"] == {"page": 1, "per_page": 1, "total": 2}
    assert [b["id"] for b in listed["data"]] == [second["id"]]
    assert api.get(f"{base}/{first['id']}").json()["data"] == first
    assert api.delete(f"{base}/{first['id']}").json() == {"data": {"success": True}}
    assert api.get(f"/v2/live/events/{event_id}").json()["data"]["unique_codes_enabled"] is True
    api.delete(f"{base}/{second['id']}")
    assert api.get(f"/v2/live/events/{event_id}").json()["data"]["unique_codes_enabled"] is False
    assert api.get(f"{base}/{first['id']}").status_code == 404
    assert api.get(f"{base}/{uuid.uuid4()}/download").json()["error"]["code"] == 400404

"""UniqueCodes against the emulator (4.7): batches, their rules, pages, the CSV, the event's flag, secrecy."""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.live_events import LiveEvents
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.client.unique_codes import UniqueCodes, parse_codes_csv
from videoferry.connectors.errors import ResponseFormatError
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


@pytest.fixture()
def transport(ws: Workspace) -> Iterator[Transport]:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    transport = Transport(ws.base_url, ws.upload_url, ws.token, limiter=limiter, retry=FAST)
    yield transport
    transport.close()


@pytest.fixture()
def event_id(transport: Transport) -> str:
    return LiveEvents(transport).create("show", "one-time").id


def test_create_get_list_and_the_event_flag(transport: Transport, event_id: str) -> None:
    codes, events = UniqueCodes(transport), LiveEvents(transport)
    today = datetime.now(UTC).date()
    first = codes.create(
        event_id, "vip", 5, max_count=3, sessions_per_code=2, expires_at=today + timedelta(7)
    )
    assert first.name == "vip" and first.codes_count == 5 and first.used_count == 0
    assert first.event_id == event_id and first.max_count == 3 and first.sessions_per_code == 2
    assert first.starts_at == datetime(today.year, today.month, today.day, tzinfo=UTC)
    assert first.expires_at is not None and first.expires_at.date() == today + timedelta(7)
    assert events.get(event_id).unique_codes_enabled is True  # the first batch turns it on
    second = codes.create(event_id, "press", 2, starts_at=(today + timedelta(1)).isoformat())
    assert second.max_count is None and second.sessions_per_code is None and second.expires_at is None
    assert codes.get(event_id, second.id) == second
    page = codes.list_batches(event_id, per_page=1)
    assert page.pagination.total == 2 and [b.id for b in page.items] == [second.id]  # newest first
    assert [b.id for b in codes.iter_batches(event_id, per_page=1)] == [second.id, first.id]
    assert codes.find(event_id, "vip") == first and codes.find(event_id, "nobody") is None
    codes.delete(event_id, first.id)
    assert events.get(event_id).unique_codes_enabled is True
    codes.delete(event_id, second.id)
    assert events.get(event_id).unique_codes_enabled is False  # the last batch went
    with pytest.raises(E.NotFoundError):
        codes.get(event_id, second.id)
    with pytest.raises(E.NotFoundError):
        codes.delete(event_id, second.id)


def test_rules(transport: Transport, event_id: str) -> None:
    codes = UniqueCodes(transport)
    codes.create(event_id, "a", 9990)
    with pytest.raises(E.NameTakenError) as taken:
        codes.create(event_id, "a", 1)
    assert taken.value.code == 400203 and [p["name"] for p in taken.value.invalid_params] == ["name"]
    with pytest.raises(E.ValidationError) as too_many:
        codes.create(event_id, "b", 10)  # 9999 codes per event
    assert [p["name"] for p in too_many.value.invalid_params] == ["codes_amount"]
    cases: list[tuple[dict, str]] = [
        ({"codes_amount": 0}, "codes_amount"),
        ({"codes_amount": 1, "max_count": 10_000}, "max_count"),
        ({"codes_amount": 1, "sessions_per_code": 101}, "sessions_per_code"),
        ({"codes_amount": 1, "starts_at": date.today() - timedelta(days=2)}, "starts_at"),
        (
            {"codes_amount": 1, "starts_at": date.today() + timedelta(5), "expires_at": date.today()},
            "expires_at",
        ),
    ]
    for fields, name in cases:
        with pytest.raises(E.ValidationError) as refused:
            codes.create(event_id, "c", **fields)
        assert name in [p["name"] for p in refused.value.invalid_params], fields
    with pytest.raises(E.ValidationError):
        codes.create(event_id, "x" * 256, 1)
    with pytest.raises(ValueError):
        codes.create(event_id, "d", 1, starts_at="tomorrow")
    with pytest.raises(E.NotFoundError):
        codes.create("00000000-0000-4000-8000-000000000000", "e", 1)


def test_download_csv(transport: Transport, event_id: str) -> None:
    codes = UniqueCodes(transport)
    limited = codes.create(event_id, "limited", 4, max_count=7)
    file = codes.download(event_id, limited.id)
    assert file.text.startswith("sep=,") and file.count == 4
    assert file.columns == ["Code", "Activation Date", "Times Used", "Usage Limit"]
    assert all(re.fullmatch(r"[A-Z]{3}[0-9]{3}", c.code) for c in file.codes)
    assert all(c.times_used == 0 and c.usage_limit == 7 and c.activated_at is None for c in file.codes)
    free = codes.create(event_id, "free", 2)
    plain = codes.download(event_id, free.id)
    assert plain.columns == ["Code", "Activation Date", "Times Used"] and plain.codes[0].usage_limit is None
    assert not {c.code for c in plain.codes} & {c.code for c in file.codes}  # unique within the event
    with pytest.raises(E.NotFoundError):
        codes.download(event_id, "00000000-0000-4000-8000-000000000000")


def test_csv_reading_tolerates_layouts_and_never_quotes_a_code() -> None:
    text = (
        "Code;Activation Date;Times Used;Usage Limit;Seat\r\nABC123;2026-01-02T03:04:05+01:00;2;5;A1\r\n\r\n"
    )
    parsed = parse_codes_csv("\ufeffsep=;\r\n" + text)
    assert parse_codes_csv("\ufeff" + text.replace(";", ",")).codes == parsed.codes  # no sep line
    code = parsed.codes[0]
    assert code.code == "ABC123" and code.times_used == 2 and code.usage_limit == 5
    assert code.activated_at == datetime(2026, 1, 2, 2, 4, 5, tzinfo=UTC)
    assert code.model_extra == {"seat": "A1"}
    assert "ABC123" not in repr(parsed) and "ABC123" not in repr(code)
    with pytest.raises(ResponseFormatError) as bad:
        parse_codes_csv("Name,Value\nXYZ987,1\n")
    assert "XYZ987" not in str(bad.value)


def test_codes_stay_out_of_logs_and_reprs(
    transport: Transport, event_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    codes = UniqueCodes(transport)
    batch = codes.create(event_id, "secret", 25)
    file = codes.download(event_id, batch.id)
    texts = [repr(file), str(file), repr(file.codes), repr(batch), repr(list(codes.iter_batches(event_id)))]
    with pytest.raises(E.NameTakenError) as taken:
        codes.create(event_id, "secret", 1)
    texts += [str(taken.value), "".join(traceback.format_exception(taken.value))]
    ours = [r for r in caplog.records if not r.name.startswith(("videoferry.emulator", "uvicorn"))]
    texts += [f"{r.name} {r.getMessage()}" for r in ours]
    blob = "\n".join(texts)
    assert len(file.codes) == 25
    for code in file.codes:
        assert code.code not in blob

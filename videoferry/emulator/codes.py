"""Unique codes (4.7): batches of 3-letter + 3-digit codes, their rules, the CSV download."""

from __future__ import annotations

import secrets
import string
from datetime import UTC, date, datetime
from typing import Any

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.errors import Invalid, batch_name_taken, validation
from videoferry.emulator.ids import new_id, parse_id
from videoferry.emulator.listing import listing, page_rows, paging
from videoferry.emulator.live import event_child, get_event
from videoferry.emulator.live_state import Batch, Event, store, ts
from videoferry.emulator.refusals import admit_create
from videoferry.emulator.state import utcnow
from videoferry.emulator.validation import Fields, read_json

MAX_CODES = 9999
MAX_NAME = 255


def batch_json(batch: Batch) -> dict[str, Any]:
    """The Batch object of 2.11 (max_count and sessions_per_code omitted when unlimited)."""
    data: dict[str, Any] = {
        "id": batch.id,
        "entity_id": batch.event_id,
        "name": batch.name,
        "codes_count": len(batch.codes),
        "used_count": sum(1 for used, _ in batch.codes.values() if used > 0),
        "starts_at": ts(batch.starts_at),
        "expires_at": ts(batch.expires_at),
        "created_at": ts(batch.created_at),
    }
    if batch.max_count is not None:
        data["max_count"] = batch.max_count
    if batch.sessions_per_code is not None:
        data["sessions_per_code"] = batch.sessions_per_code
    return data


def _date(f: Fields, name: str) -> date | None:
    raw = f.string(name)
    if raw is None:
        return None
    try:
        if len(raw) != 10:
            raise ValueError(raw)
        return date.fromisoformat(raw)
    except ValueError:
        f.add(name, "date", "YYYY-MM-DD")
        return None


def _ranged(f: Fields, name: str, high: int, required: bool = False) -> int | None:
    value = f.integer(name, required=required)
    if value is not None and not 1 <= value <= high:
        f.add(name, "range", f"1..{high}")
    return value


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _new_codes(amount: int, taken: set[str]) -> dict[str, tuple[int, datetime | None]]:
    codes: dict[str, tuple[int, datetime | None]] = {}
    while len(codes) < amount:
        code = "".join(secrets.choice(string.ascii_uppercase) for _ in range(3)) + "".join(
            secrets.choice(string.digits) for _ in range(3)
        )
        if code not in taken and code not in codes:
            codes[code] = (0, None)
    return codes


async def create_batch(ctx: Ctx) -> Resp:
    """POST .../unique-codes: the first batch turns unique_codes_enabled on."""
    event_id = parse_id(ctx.params["event_id"])
    f = Fields(await read_json(ctx.request))
    name = f.string("name", required=True, notempty=True)
    if name is not None and len(name) > MAX_NAME:
        f.add("name", "max", f"at most {MAX_NAME} characters")
    amount = _ranged(f, "codes_amount", MAX_CODES, required=True)
    max_count = _ranged(f, "max_count", 9999)
    sessions = _ranged(f, "sessions_per_code", 100)
    today = datetime.now(UTC).date()
    starts = _date(f, "starts_at")
    expires = _date(f, "expires_at")
    if starts is not None and starts < today:
        f.add("starts_at", "min", "today or later")
    if expires is not None and expires < (starts or today):
        f.add("expires_at", "gtefield", "not earlier than starts_at")
    f.check()
    assert name is not None and amount is not None
    with ctx.emu.lock:
        event = get_event(ctx, event_id)
        if any(b.name == name for b in event.batches.values()):
            raise batch_name_taken()
        active = sum(len(b.codes) for b in event.batches.values())
        if active + amount > MAX_CODES:
            raise validation(
                Invalid("codes_amount", "max", f"at most {MAX_CODES - active} more codes for this event")
            )
        admit_create(ctx.ws)
        taken = {c for b in event.batches.values() for c in b.codes}
        batch = Batch(
            id=new_id(),
            event_id=event.id,
            name=name,
            codes=_new_codes(amount, taken),
            max_count=max_count,
            sessions_per_code=sessions,
            starts_at=_midnight(starts or today),
            expires_at=_midnight(expires) if expires is not None else None,
            seq=store(ctx.ws).next_seq(),
        )
        first = not event.batches
        event.batches[batch.id] = batch
        _codes_enabled(event, True)
        if first and ctx.ws.variants.has("codes-reset-share") and event.settings["privacy_share"]:
            event.settings["privacy_share"] = {}  # this service's reading of 3.2: the first batch resets it
            event.updated_at = utcnow()
        return Resp(201, {"data": batch_json(batch)})


def _codes_enabled(event: Event, value: bool) -> None:
    if event.settings["unique_codes_enabled"] != value:
        # privacy_share is left as it is by default: spec 3.2 resets it on an event create / update that
        # sends unique_codes_enabled true (live.py); variant codes-reset-share resets it on the first batch.
        event.settings["unique_codes_enabled"] = value
        event.updated_at = utcnow()


def _batch(ctx: Ctx) -> tuple[Event, Batch]:
    return event_child(ctx, lambda e: e.batches, "batch_id", "unique codes batch")


async def list_batches(ctx: Ctx) -> Resp:
    """GET .../unique-codes?page=&per_page=: newest first."""
    page, per_page = paging(ctx)
    with ctx.emu.lock:
        rows = sorted(get_event(ctx).batches.values(), key=lambda b: b.seq, reverse=True)
        data = [batch_json(b) for b in page_rows(rows, page, per_page)]
    return Resp(200, listing(len(rows), page, per_page, "created_at", "desc", data))


async def get_batch(ctx: Ctx) -> Resp:
    """GET .../unique-codes/:batch_id."""
    with ctx.emu.lock:
        return Resp(200, {"data": batch_json(_batch(ctx)[1])})


def batch_csv(batch: Batch) -> str:
    """The download: `sep=,`, the header, one row per code (Usage Limit only with max_count)."""
    limit = batch.max_count is not None
    lines = ["sep=,", "Code,Activation Date,Times Used" + (",Usage Limit" if limit else "")]
    for code, (used, activated) in batch.codes.items():
        row = [code, activated.isoformat() if activated is not None else "", str(used)]
        if limit:
            row.append(str(batch.max_count))
        lines.append(",".join(row))
    return "\r\n".join(lines) + "\r\n"


async def download_batch(ctx: Ctx) -> Resp:
    """GET .../unique-codes/:batch_id/download: text/csv."""
    with ctx.emu.lock:
        _event, batch = _batch(ctx)
        text = batch_csv(batch)
    headers = {
        "content-type": "text/csv; charset=utf-8",
        "Content-Disposition": f'attachment; filename="unique-codes-{batch.id}.csv"',
    }
    return Resp(200, raw=text.encode("utf-8"), headers=headers)


async def delete_batch(ctx: Ctx) -> Resp:
    """DELETE .../unique-codes/:batch_id: the last one turns unique_codes_enabled off."""
    with ctx.emu.lock:
        event, batch = _batch(ctx)
        del event.batches[batch.id]
        if not event.batches:
            _codes_enabled(event, False)
    return Resp(200, {"data": {"success": True}})


def codes_routes() -> list[Route]:
    """Routes of 4.7."""
    base = "/v2/live/events/{event_id}/unique-codes"
    return [
        route(base, {"POST": create_batch, "GET": list_batches}),
        route(f"{base}/{{batch_id}}", {"GET": get_batch, "DELETE": delete_batch}),
        route(f"{base}/{{batch_id}}/download", {"GET": download_batch}),
    ]

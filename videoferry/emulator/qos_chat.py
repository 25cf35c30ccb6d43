"""QoS statistics (window, buckets, 12-hour cap) and chat logs (.json, .csv, .txt) of live events."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from videoferry.emulator.app import Ctx, Resp, Route
from videoferry.emulator.errors import Invalid, no_such_entity, not_found, validation
from videoferry.emulator.ids import parse_id
from videoferry.emulator.live import get_event
from videoferry.emulator.live_state import Stream, store, ts
from videoferry.emulator.state import utcnow

DEFAULT_BUCKET = 30
CAP = timedelta(hours=12)
_NAMED = {"1m": 60, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
CHAT_FIELDS = ("id", "username", "external_id", "is_admin", "message", "created_at", "cteated_at_local")


def bucket_of(raw: str | None) -> int | str:
    """Seconds of a bucket, or "month"; 400400 naming group_time when it is not understood."""
    if raw in (None, ""):
        return DEFAULT_BUCKET
    assert raw is not None
    if raw == "month":
        return "month"
    if raw in _NAMED:
        return _NAMED[raw]
    match = _DURATION.match(raw)
    if match and int(match.group(1)) > 0:
        return int(match.group(1)) * _UNITS[match.group(2)]
    raise validation(
        Invalid("group_time", "oneof", "1m minute hour day week month or a duration like 30s, 5m")
    )


def moment(raw: str | None, name: str) -> datetime | None:
    """YYYY-MM-DD (midnight UTC) or RFC 3339; 400400 naming the parameter otherwise."""
    if raw in (None, ""):
        return None
    assert raw is not None
    try:
        if len(raw) == 10:
            return datetime.fromisoformat(raw).replace(tzinfo=UTC)
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise validation(Invalid(name, "datetime", "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")) from None
    if value.tzinfo is None:
        raise validation(Invalid(name, "datetime", "YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"))
    return value.astimezone(UTC)


def _start_of(stamp: datetime, bucket: int | str) -> datetime:
    if bucket == "month":
        return stamp.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    assert isinstance(bucket, int)
    epoch = int(stamp.timestamp())
    return datetime.fromtimestamp(epoch - epoch % bucket, UTC)


def aggregate(samples: list[dict[str, Any]], bucket: int | str) -> list[dict[str, Any]]:
    """Average the numbers of each bucket; status is the worst of the bucket; timestamp its start."""
    groups: dict[datetime, list[dict[str, Any]]] = {}
    for sample in sorted(samples, key=lambda s: s["timestamp"]):
        groups.setdefault(_start_of(sample["timestamp"], bucket), []).append(sample)
    out = []
    for start, rows in groups.items():
        item: dict[str, Any] = {
            key: round(sum(r[key] for r in rows) / len(rows), 3)
            for key in ("frame_rate", "bitrate_video", "bitrate_audio", "packet_loss")
        }
        item["timestamp"] = ts(start)
        item["status"] = max(r["status"] for r in rows)
        out.append(item)
    return out


def _stream_of(ctx: Ctx, raw: str | None) -> Stream:
    event = get_event(ctx)
    if raw in (None, ""):  # the current one; for a recurring event between streams, the one that ran last
        live = event.stream if event.stream.status == "live" else None
        return live or event.last_ran or event.stream
    assert raw is not None
    stream_id = parse_id(raw)
    for stream in event.streams:
        if stream.id == stream_id:
            return stream
    raise no_such_entity()


async def qos(ctx: Ctx) -> Resp:
    """GET .../qos?stream_id=&from=&to=&group_time=: {session, qos}."""
    query = ctx.request.query_params
    bucket = bucket_of(query.get("group_time"))
    start_q = moment(query.get("from"), "from")
    end_q = moment(query.get("to"), "to")
    with ctx.emu.lock:
        stream = _stream_of(ctx, query.get("stream_id"))
        samples = list(stream.qos)
        session = dict(stream.session) if stream.session is not None else None
        started, finished = stream.started_at, stream.finished_at
    rows: list[dict[str, Any]] = []
    if started is not None:
        # spec 4.5 / 8: the window is capped at the last 12 hours of the stream window (started_at to
        # finished_at, or now while it runs), whatever from / to ask
        window_end = finished or utcnow()
        start = max(start_q or started, window_end - CAP)
        end = min(end_q or window_end, window_end)
        rows = aggregate([s for s in samples if start <= s["timestamp"] <= end], bucket)
    return Resp(200, {"session": session, "qos": rows})


def chat_json(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message of 2.13 (with the spec's `cteated_at_local` spelling)."""
    created: datetime = message["created_at"]
    return {
        "id": message["id"],
        "username": message["username"],
        "external_id": message["external_id"],
        "is_admin": message["is_admin"],
        "message": message["message"],
        "created_at": ts(created),
        "cteated_at_local": created.astimezone(UTC).isoformat(timespec="microseconds"),
    }


def chat_csv(messages: list[dict[str, Any]]) -> str:
    """Header row of the JSON field names, one row per message (RFC 4180 quoting)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CHAT_FIELDS)
    for item in messages:
        writer.writerow([item[k] for k in CHAT_FIELDS])
    return out.getvalue()


def chat_txt(messages: list[dict[str, Any]]) -> str:
    """One line per message: `[created_at] username: message` (line breaks in a message become spaces)."""
    lines = [f"[{m['created_at']}] {m['username']}: {' '.join(m['message'].splitlines())}" for m in messages]
    return "".join(line + "\n" for line in lines)


async def chat(ctx: Ctx) -> Resp:
    """GET .../stream/:stream_id/chat(.json|.csv|.txt): the bare `chat` is JSON."""
    stream_id = parse_id(ctx.params["stream_id"])
    fmt = ctx.params.get("fmt") or ".json"
    with ctx.emu.lock:
        event = get_event(ctx)
        stream = next((s for s in event.streams if s.id == stream_id), None)
        if stream is None:
            raise not_found("stream")
        messages = [chat_json(m) for m in stream.chat]
    if fmt == ".json":
        return Resp(200, {"data": messages})
    if fmt == ".csv":
        return Resp(200, raw=chat_csv(messages).encode(), headers={"content-type": "text/csv; charset=utf-8"})
    return Resp(200, raw=chat_txt(messages).encode(), headers={"content-type": "text/plain; charset=utf-8"})


def qos_chat_routes() -> list[Route]:
    """Routes of QoS and chat."""
    chat_path = re.compile(
        r"^/v2/live/events/(?P<event_id>[^/]+)/stream/(?P<stream_id>[^/]+)/chat(?P<fmt>\.json|\.csv|\.txt)?$"
    )
    return [
        Route(re.compile(r"^/v2/live/events/(?P<event_id>[^/]+)/qos$"), {"GET": qos}),
        Route(chat_path, {"GET": chat}),
    ]


__all__ = ["qos_chat_routes", "store"]

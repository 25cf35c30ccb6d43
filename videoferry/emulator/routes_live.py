"""Thin routes of live events (4.5) and restreams (4.6)."""

from __future__ import annotations

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.errors import (
    Invalid,
    folder_missing,
    validation,
)
from videoferry.emulator.ids import new_id, parse_id
from videoferry.emulator.listing import by_update, listing, order_of, page_rows, paging
from videoferry.emulator.live import (
    apply_fields,
    create_event,
    event_child,
    event_fields,
    event_json,
    get_event,
    parse_time,
    place,
    require_pending,
    restream_fields,
    restream_json,
    schedule_stream,
    stream_json,
)
from videoferry.emulator.live_state import Event, Restream, resolve_parent, store
from videoferry.emulator.refusals import admit_create
from videoferry.emulator.scopes import require_filter, visible_projects
from videoferry.emulator.state import apply_changes, utcnow
from videoferry.emulator.validation import Fields, read_json
from videoferry.emulator.views import video_json

EVENT_ORDER = ("created_at", "updated_at", "name")


async def create(ctx: Ctx) -> Resp:
    """POST /v2/live/events."""
    f = Fields(await read_json(ctx.request))
    fields = event_fields(f, create=True)
    f.check()
    event = create_event(ctx, fields)
    return Resp(201, {"data": event_json(event, ctx.emu.base_url)})


async def list_events(ctx: Ctx) -> Resp:
    """GET /v2/live/events?page=&per_page=&order=&parent_id=&type=."""
    page, per_page = paging(ctx)
    field, direction = order_of(ctx, EVENT_ORDER, "created_at.desc")
    query = ctx.request.query_params
    parent_id = parse_id(query["parent_id"]) if query.get("parent_id") else None
    kind = query.get("type") or None
    require_filter(ctx, parent_id)
    visible = visible_projects(ctx)
    with ctx.emu.lock:
        rows = [
            e
            for e in store(ctx.ws).events.values()
            if (parent_id is None or parent_id in (e.parent_id, e.project_id))
            and (kind is None or e.type == kind)
            and (visible is None or e.project_id in visible)
        ]
        if field == "name":
            rows.sort(key=lambda e: (e.name, e.seq))
        elif field == "updated_at":
            rows.sort(key=lambda e: (*by_update(e), e.seq))
        else:
            rows.sort(key=lambda e: e.seq)
        if direction == "desc":
            rows.reverse()
        data = [event_json(e, ctx.emu.base_url) for e in page_rows(rows, page, per_page)]
    return Resp(200, listing(len(rows), page, per_page, field, direction, data))


async def get(ctx: Ctx) -> Resp:
    """GET /v2/live/events/:id."""
    with ctx.emu.lock:
        return Resp(200, {"data": event_json(get_event(ctx), ctx.emu.base_url)})


async def update(ctx: Ctx) -> Resp:
    """PUT /v2/live/events/:id: only while the stream is pending."""
    event_id = parse_id(ctx.params["event_id"])
    f = Fields(await read_json(ctx.request))
    fields = event_fields(f, create=False)
    f.check()
    with ctx.emu.lock:
        event = get_event(ctx, event_id)
        require_pending(event)
        # every check before the first change: a refused update leaves the event as it was
        if "parent_id" in fields:
            place(ctx, fields["parent_id"], "parent_id")
        record = fields.get("record_parent_id")
        if record is not None and resolve_parent(ctx.ws, record) is None:
            raise folder_missing("record.parent_id")
        kind = fields.get("privacy_type", event.settings["privacy_type"])
        if kind == "custom" and not fields.get("privacy_domains", event.settings["privacy_domains"]):
            raise validation(Invalid("privacy_domains", "required_if", "privacy_type custom"))
        apply_fields(ctx, event, fields)
        event.updated_at = utcnow()
        return Resp(200, {"data": event_json(event, ctx.emu.base_url)})


async def delete(ctx: Ctx) -> Resp:
    """DELETE /v2/live/events/:id: the event, its streams, restreams and batches (recordings stay)."""
    with ctx.emu.lock:
        event = get_event(ctx)
        del store(ctx.ws).events[event.id]
    return Resp(200, {"data": {"success": True}})


async def enable(ctx: Ctx) -> Resp:
    """PUT .../enable: streams can be ingested and played back (refused once completed)."""
    with ctx.emu.lock:
        event = get_event(ctx)
        if event.status == "completed":
            raise validation(Invalid("event_id", "completed", "an event that is not completed"))
        if event.status != "enabled":
            event.status = "enabled"
            event.updated_at = utcnow()
        return Resp(200, {"data": event_json(event, ctx.emu.base_url)})


async def complete(ctx: Ctx) -> Resp:
    """PUT .../complete: the event is completed; ingest stops (a later broadcast is refused)."""
    with ctx.emu.lock:
        event = get_event(ctx)
        if event.status != "completed":
            event.status = "completed"
            event.updated_at = utcnow()
        return Resp(200, {"data": event_json(event, ctx.emu.base_url)})


async def move(ctx: Ctx) -> Resp:
    """PUT .../move {parent_id}."""
    event_id = parse_id(ctx.params["event_id"])
    f = Fields(await read_json(ctx.request))
    parent_id = f.ident("parent_id", required=True)
    f.check()
    with ctx.emu.lock:
        event = get_event(ctx, event_id)
        event.parent_id, event.project_id = place(ctx, parent_id, "parent_id")
        event.updated_at = utcnow()
        return Resp(200, {"data": event_json(event, ctx.emu.base_url)})


async def _stream(ctx: Ctx, new: bool) -> Resp:
    event_id = parse_id(ctx.params["event_id"])
    f = Fields(await read_json(ctx.request))
    if not f.present("started_at"):
        f.add("started_at", "required", "RFC 3339 datetime")
    started_at = parse_time(f, "started_at")
    f.check()
    assert started_at is not None
    with ctx.emu.lock:
        stream = schedule_stream(ctx, get_event(ctx, event_id), started_at, new)
        return Resp(201 if new else 200, {"data": stream_json(stream)})


async def post_stream(ctx: Ctx) -> Resp:
    """POST .../stream {started_at}: schedules a new stream."""
    return await _stream(ctx, True)


async def put_stream(ctx: Ctx) -> Resp:
    """PUT .../stream {started_at}: reschedules the upcoming stream."""
    return await _stream(ctx, False)


async def recordings(ctx: Ctx) -> Resp:
    """GET .../videos: videos with meta.event_id of the event, by creation time (asc by default)."""
    page, per_page = paging(ctx)
    field, direction = order_of(ctx, ("created_at",), "created_at.asc")
    with ctx.emu.lock:
        event = get_event(ctx)
        rows = sorted(
            (v for v in ctx.ws.videos.values() if v.meta and v.meta.get("event_id") == event.id),
            key=lambda v: (v.created_at, v.seq),
            reverse=direction == "desc",
        )
        data = []
        for video in page_rows(rows, page, per_page):
            item = video_json(video, ctx.emu.base_url, "list", ctx.ws.variants)
            item["meta"] = dict(video.meta or {})
            data.append(item)
    return Resp(200, listing(len(rows), page, per_page, field, direction, data))


# ---------------------------------------------------------------------------------------------- restreams


def _restream(ctx: Ctx) -> tuple[Event, Restream]:
    return event_child(ctx, lambda e: e.restreams, "restream_id", "restream")


async def create_restream(ctx: Ctx) -> Resp:
    """POST .../restreams {name, url, key, description?, enabled?}."""
    event_id = parse_id(ctx.params["event_id"])
    f = Fields(await read_json(ctx.request))
    fields = restream_fields(f, create=True)
    f.check()
    with ctx.emu.lock:
        event = get_event(ctx, event_id)
        admit_create(ctx.ws)
        target = Restream(id=new_id(), event_id=event.id, **fields)
        event.restreams[target.id] = target
        return Resp(201, {"data": restream_json(target)})


async def list_restreams(ctx: Ctx) -> Resp:
    """GET .../restreams: a plain data array, no meta."""
    with ctx.emu.lock:
        event = get_event(ctx)
        return Resp(200, {"data": [restream_json(r) for r in event.restreams.values()]})


async def get_restream(ctx: Ctx) -> Resp:
    """GET .../restreams/:id."""
    with ctx.emu.lock:
        return Resp(200, {"data": restream_json(_restream(ctx)[1])})


async def update_restream(ctx: Ctx) -> Resp:
    """PUT .../restreams/:id: only passed fields change."""
    parse_id(ctx.params["event_id"]), parse_id(ctx.params["restream_id"])
    f = Fields(await read_json(ctx.request))
    fields = restream_fields(f, create=False)
    f.check()
    with ctx.emu.lock:
        _event, target = _restream(ctx)
        if apply_changes(target, fields):
            target.updated_at = utcnow()
        return Resp(200, {"data": restream_json(target)})


async def delete_restream(ctx: Ctx) -> Resp:
    """DELETE .../restreams/:id: permanent."""
    with ctx.emu.lock:
        event, target = _restream(ctx)
        del event.restreams[target.id]
    return Resp(200, {"data": {"success": True}})


def live_routes() -> list[Route]:
    """Routes of 4.5 (without QoS and chat) and 4.6."""
    base = "/v2/live/events/{event_id}"
    return [
        route("/v2/live/events", {"POST": create, "GET": list_events}),
        route(base, {"GET": get, "PUT": update, "DELETE": delete}),
        route(f"{base}/enable", {"PUT": enable}),
        route(f"{base}/complete", {"PUT": complete}),
        route(f"{base}/move", {"PUT": move}),
        route(f"{base}/stream", {"POST": post_stream, "PUT": put_stream}),
        route(f"{base}/videos", {"GET": recordings}),
        route(f"{base}/restreams", {"POST": create_restream, "GET": list_restreams}),
        route(
            f"{base}/restreams/{{restream_id}}",
            {"GET": get_restream, "PUT": update_restream, "DELETE": delete_restream},
        ),
    ]

"""Live events (4.5): the create / update body rules, the Event and Stream views, stream scheduling."""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from videoferry.emulator.app import Ctx
from videoferry.emulator.errors import (
    Invalid,
    folder_missing,
    not_exists,
    not_found,
    stream_not_pending,
    validation,
)
from videoferry.emulator.ids import new_id, parse_id, to_base58
from videoferry.emulator.live_state import (
    Event,
    Restream,
    Stream,
    resolve_parent,
    store,
    ts,
)
from videoferry.emulator.refusals import admit_create
from videoferry.emulator.scopes import require_project
from videoferry.emulator.state import PRIVACY_TYPES
from videoferry.emulator.validation import Fields

T = TypeVar("T")
TYPES = ("one-time", "recurring")
PRESETS = ("360p", "480p", "720p", "1080p", "1440p", "2160p")
LATENCY = ("standard", "reduced")
_LINK_HASH = re.compile(r"^[A-Za-z0-9]{6}$")
DEFAULTS: dict[str, Any] = {
    "subtitle": "",
    "auto_start": False,
    "protected": False,
    "time_shift": False,
    "reconnect_window": 600,
    "latency_mode": "standard",
    "show_members": True,
    "chat_active": False,
    "chat_after_stream": True,
    "chat_preview": True,
    "allow_chat_links": False,
    "unique_codes_enabled": False,
}
# A project's privacy (the emulator's projects all have privacy "anywhere").
PROJECT_PRIVACY: dict[str, Any] = {
    "privacy_type": "anywhere",
    "privacy_domains": [],
    "privacy_email_domains": [],
    "privacy_share": {},
}
_BOOLS = (
    "auto_start",
    "protected",
    "time_shift",
    "show_members",
    "chat_active",
    "chat_after_stream",
    "chat_preview",
    "allow_chat_links",
    "unique_codes_enabled",
)


def parse_time(f: Fields, name: str) -> datetime | None:
    """An RFC 3339 datetime field (400400 naming it when unparseable)."""
    raw = f.string(name)
    if raw is None:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        f.add(name, "datetime", "RFC 3339 datetime")
        return None
    if value.tzinfo is None:
        f.add(name, "datetime", "RFC 3339 datetime with a time zone")
        return None
    return value


def restream_fields(f: Fields, *, create: bool) -> dict[str, Any]:
    """name, url, key (required on create), description, enabled of a restream target."""
    out: dict[str, Any] = {}
    for name in ("name", "url", "key"):
        value = f.string(name, required=create, notempty=True)
        if value is not None:
            out[name] = value
    if "url" in out and urlsplit(out["url"]).scheme.lower() not in ("rtmp", "rtmps"):
        f.add("url", "url", "rtmp:// or rtmps:// address")
    description = f.string("description")
    if description is not None:
        out["description"] = description
    enabled = f.boolean("enabled")
    if enabled is not None:
        out["enabled"] = enabled
    return out


def event_fields(f: Fields, *, create: bool) -> dict[str, Any]:
    """Validate a create (or update) body; the passed fields, with parsed values."""
    out: dict[str, Any] = {}
    name = f.string("name", required=create, notempty=True)
    if name is not None:
        out["name"] = name
    kind = f.oneof("type", TYPES, required=create)
    if kind is not None:
        out["type"] = kind
    parent_id = f.ident("parent_id")
    if parent_id is not None:
        out["parent_id"] = parent_id
    subtitle = f.string("subtitle")
    if subtitle is not None:
        out["subtitle"] = subtitle
    for key in _BOOLS:
        value = f.boolean(key)
        if value is not None:
            out[key] = value
    window = f.integer("reconnect_window", minimum=0)
    if window is not None:
        out["reconnect_window"] = window
    latency = f.oneof("latency_mode", LATENCY)
    if latency is not None:
        out["latency_mode"] = latency
    scheduled = f.obj("scheduled")
    if scheduled is not None:
        out["scheduled_time"] = parse_time(scheduled, "time")
    record = f.obj("record")
    if record is not None:
        out["record_parent_id"] = record.ident("parent_id")
    video = f.obj("video")
    if video is not None:
        presets = video.strings("presets")
        for i, preset in enumerate(presets or []):
            if preset not in PRESETS:
                video.add(f"presets[{i}]", "oneof", " ".join(PRESETS))
        out["presets"] = presets
    restreams = f.objects("restreams")
    if restreams is not None:
        out["restreams"] = [restream_fields(r, create=True) for r in restreams]
    out.update(privacy_fields(f))
    return out


def privacy_fields(f: Fields) -> dict[str, Any]:
    """privacy_type, privacy_domains, privacy_email_domains, privacy_share with their rules."""
    out: dict[str, Any] = {}
    kind = f.oneof("privacy_type", PRIVACY_TYPES)
    if kind is not None:
        out["privacy_type"] = kind
    for name in ("privacy_domains", "privacy_email_domains"):
        value = f.strings(name)
        if value is not None:
            out[name] = value
    if f.present("privacy_type") and kind == "custom" and not out.get("privacy_domains"):
        f.add("privacy_domains", "required_if", "privacy_type custom")
    share = f.obj("privacy_share")
    if share is not None:
        kept: dict[str, Any] = {}
        password = share.string("password")
        link_hash = share.string("link_hash")
        sso = share.boolean("sso")
        if password is not None and len(password) < 2:
            share.add("password", "min", "at least 2 characters")
        if link_hash is not None and not _LINK_HASH.match(link_hash):
            share.add("link_hash", "len", "exactly 6 letters or digits")
        if password is not None and link_hash is not None:
            share.add("password", "excluded_with", "password or link_hash, not both")
        if sso:
            share.add("sso", "oneof", "false (SSO is not enabled for the workspace)")
        for key, item in (("password", password), ("link_hash", link_hash), ("sso", sso)):
            if item is not None:
                kept[key] = item
        out["privacy_share"] = kept
    return out


def place(ctx: Ctx, parent_id: str | None, name: str) -> tuple[str, str]:
    """(parent_id, project_id) of a new or moved event; 400236 when the parent does not exist."""
    if parent_id is None:
        parent_id = ctx.ws.default_project_id
    found = resolve_parent(ctx.ws, parent_id)
    if found is None:
        raise folder_missing(name)
    require_project(ctx, found[0])
    return parent_id, found[0]


def apply_fields(ctx: Ctx, event: Event, fields: dict[str, Any]) -> None:
    """Write validated fields onto an event (privacy_share reset by unique_codes_enabled true)."""
    for key in ("name", "type"):
        if key in fields:
            setattr(event, key, fields[key])
    if "parent_id" in fields:
        event.parent_id, event.project_id = place(ctx, fields["parent_id"], "parent_id")
    if "record_parent_id" in fields:
        record = fields["record_parent_id"]
        if record is not None and resolve_parent(ctx.ws, record) is None:
            raise folder_missing("record.parent_id")
        event.record_parent_id = record
    if "presets" in fields:
        event.presets = fields["presets"]
    if "scheduled_time" in fields:
        event.scheduled_time = fields["scheduled_time"]
        upcoming = event.upcoming
        if upcoming is not None:
            upcoming.started_at = event.scheduled_time
    if "restreams" in fields:
        event.restreams = {}
        for item in fields["restreams"]:
            target = Restream(id=new_id(), event_id=event.id, **item)
            event.restreams[target.id] = target
    settings = {k: v for k, v in fields.items() if k in DEFAULTS or k.startswith("privacy_")}
    event.settings.update(settings)
    if fields.get("unique_codes_enabled"):
        event.settings["privacy_share"] = {}


def check_custom(event: Event) -> None:
    """privacy_type custom needs privacy_domains (passed or stored)."""
    if event.settings["privacy_type"] == "custom" and not event.settings["privacy_domains"]:
        raise validation(Invalid("privacy_domains", "required_if", "privacy_type custom"))


def create_event(ctx: Ctx, fields: dict[str, Any]) -> Event:
    """A new event in draft with one pending stream."""
    with ctx.emu.lock:
        parent_id, project_id = place(ctx, fields.get("parent_id"), "parent_id")
        admit_create(ctx.ws)
        live = store(ctx.ws)
        event = Event(
            id=new_id(),
            workspace_id=ctx.ws.id,
            parent_id=parent_id,
            project_id=project_id,
            name=fields["name"],
            type=fields["type"],
            streamkey=secrets.token_urlsafe(18),
            seq=live.next_seq(),
            settings={**DEFAULTS, **PROJECT_PRIVACY},
        )
        event.streams.append(Stream(id=new_id(), event_id=event.id))
        apply_fields(ctx, event, {k: v for k, v in fields.items() if k != "parent_id"})
        check_custom(event)
        live.events[event.id] = event
        return event


def get_event(ctx: Ctx, event_id: str | None = None) -> Event:
    """The event named by the path (404 / 400404; 403 / 100103 for a token of other projects)."""
    if event_id is None:
        event_id = parse_id(ctx.params["event_id"])
    event = store(ctx.ws).events.get(event_id)
    if event is None:
        raise not_found("event")
    require_project(ctx, event.project_id)
    return event


def event_child(
    ctx: Ctx, children: Callable[[Event], dict[str, T]], param: str, what: str
) -> tuple[Event, T]:
    """The event of the path and one of its children named by another path id (404 / 400404 naming it)."""
    event = get_event(ctx)
    child = children(event).get(parse_id(ctx.params[param]))
    if child is None:
        raise not_found(what)
    return event, child


def require_pending(event: Event) -> None:
    """Updates are allowed only while the current stream is pending."""
    state = event.stream.status
    if state != "pending":
        raise stream_not_pending(state)


def stream_json(stream: Stream) -> dict[str, Any]:
    """The Stream object of 2.10."""
    return {
        "id": stream.id,
        "event_id": stream.event_id,
        "status": stream.status,
        "started_at": ts(stream.started_at),
        "finished_at": ts(stream.finished_at),
    }


def restream_json(target: Restream) -> dict[str, Any]:
    """The Restream object of 2.9."""
    return {
        "id": target.id,
        "event_id": target.event_id,
        "name": target.name,
        "url": target.url,
        "key": target.key,
        "description": target.description,
        "enabled": target.enabled,
        "status": "disconnected",
        "created_at": ts(target.created_at),
        "updated_at": ts(target.updated_at),
    }


def default_poster(event: Event, base_url: str) -> dict[str, Any]:
    """The default poster links of an event without an uploaded poster."""
    base = f"{base_url}/posters/default/live"
    return {
        "id": str(uuid.uuid5(uuid.UUID(event.id), "poster")),
        "type": "image",
        "media_id": event.id,
        "status": "done",
        "active": True,
        **{size: f"{base}/{size}.jpg" for size in ("original", "md", "sm", "xs")},
        "from_time": 0,
        "to_time": 0,
    }


def event_json(event: Event, base_url: str) -> dict[str, Any]:
    """The Live event object of 2.8 (plus `status`: draft, enabled or completed)."""
    s = event.settings
    host = urlsplit(base_url).hostname or "127.0.0.1"
    share = dict(s["privacy_share"])
    if "link_hash" in share:
        share["link"] = f"{base_url}/live/{to_base58(event.id)}?hash={share['link_hash']}"
    return {
        "id": event.id,
        "workspace_id": event.workspace_id,
        "parent_id": event.parent_id,
        "name": event.name,
        "subtitle": s["subtitle"],
        "type": event.type,
        "streamkey": event.streamkey,
        "auto_start": s["auto_start"],
        "protected": s["protected"],
        "time_shift": s["time_shift"],
        "record": {"parent_id": event.record_parent_id},
        "video": {"presets": event.presets},
        "audio": {"channel_mapping": None},
        "restreams": [restream_json(r) for r in event.restreams.values()],
        "reconnect_window": s["reconnect_window"],
        "play_link": f"{base_url}/live/{to_base58(event.id)}",
        "rtmp_link": f"rtmp://{host}:1935/live",
        "scheduled": {"time": ts(event.scheduled_time)},
        "stream": stream_json(event.stream),
        "chat_after_stream": s["chat_after_stream"],
        "chat_active": s["chat_active"],
        "chat_preview": s["chat_preview"],
        "show_members": s["show_members"],
        "allow_chat_links": s["allow_chat_links"],
        "moderators": None,
        "created_at": ts(event.created_at),
        "updated_at": ts(event.updated_at),
        "latency_mode": s["latency_mode"],
        "privacy_type": s["privacy_type"],
        "privacy_domains": list(s["privacy_domains"]),
        "privacy_email_domains": list(s["privacy_email_domains"]),
        "privacy_share": share,
        "unique_codes_enabled": s["unique_codes_enabled"],
        "poster": event.poster or default_poster(event, base_url),
        "status": event.status,
    }


def schedule_stream(ctx: Ctx, event: Event, started_at: datetime, new: bool) -> Stream:
    """POST .../stream schedules a new stream (recurring events); PUT moves the upcoming one."""
    if event.status == "completed":
        raise validation(Invalid("event_id", "completed", "an event that is not completed"))
    if not new:
        upcoming = event.upcoming
        if upcoming is None:
            raise not_exists("started_at", "an upcoming (pending) stream")
        upcoming.started_at = started_at
        return upcoming
    if event.type == "one-time":
        one_stream = "a recurring event (a one-time event has one stream: PUT .../stream moves it)"
        raise validation(Invalid("event_id", "one-time", one_stream))
    admit_create(ctx.ws)
    stream = Stream(id=new_id(), event_id=event.id, started_at=started_at)
    event.streams.append(stream)
    return stream

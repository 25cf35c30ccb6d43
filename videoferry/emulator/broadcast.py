"""Broadcast simulation, DRM license requests and scoped tokens (control API); poster upload (/v2/poster)."""

from __future__ import annotations

import asyncio
import os
import random
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.drm import callback_for, license_request
from videoferry.emulator.errors import Invalid, folder_missing, not_exists, not_found, validation
from videoferry.emulator.files import md5_file
from videoferry.emulator.ids import new_id, parse_id
from videoferry.emulator.live import default_poster
from videoferry.emulator.live_state import Event, Stream, resolve_parent, store
from videoferry.emulator.media.clips import make_clip
from videoferry.emulator.scopes import TokenScope, require_project, scopes
from videoferry.emulator.state import utcnow
from videoferry.emulator.validation import Fields

if TYPE_CHECKING:
    from videoferry.emulator.routes_control import ControlApp

ControlHandler = Callable[[Request, dict[str, str]], Awaitable[Resp]]
MAX_SECONDS = 600
#: Longest simulated stream (stream_seconds): its timestamps are set in the past, nothing waits.
MAX_STREAM_SECONDS = 7 * 24 * 3600
#: Largest size_bytes a broadcast's recording may be padded to (a benchmark's multi-GB recording).
MAX_SIZE_BYTES = 64 * 1024**3
_PAD_BLOCK = 1024 * 1024
QOS_EVERY = 30
POSTER_TIMEOUT = 10.0
_IMAGES = ((b"\xff\xd8\xff", ".jpg"), (b"\x89PNG\r\n\x1a\n", ".png"), (b"GIF8", ".gif"))


def _reserve(event: Event) -> Stream:
    """The stream a broadcast runs: the upcoming one, or a new one for a recurring event.

    Only an enabled event is ingested (spec 3.2): a draft one is refused, so is a completed one.
    """
    if event.status == "completed":
        raise validation(Invalid("event_id", "completed", "an event that is not completed"))
    if event.status != "enabled":
        raise validation(
            Invalid(
                "event_id",
                "not enabled",
                "an enabled event: the ingest takes streams of enabled events only (PUT .../enable first)",
            )
        )
    upcoming = event.upcoming
    if upcoming is not None:
        stream = upcoming
    elif event.type == "one-time":
        raise validation(Invalid("event_id", "one-time", "a recurring event (a one-time event streams once)"))
    else:
        stream = Stream(id=new_id(), event_id=event.id)
        event.streams.append(stream)
    stream.status = "live"
    return stream


def _fill(stream: Stream, seconds: float, chat_messages: int, with_qos: bool, seed: int) -> None:
    now = utcnow()
    rng = random.Random(seed)
    stream.started_at = now - timedelta(seconds=seconds)
    stream.finished_at = now
    stream.status = "finished"
    stream.session = {"host": "ingest-1.emulator.local", "client_ip": "127.0.0.1", "country": "US"}
    for i in range(chat_messages):
        stream.chat.append(
            {
                "id": new_id(),
                "username": f"viewer{i % 7 + 1}",
                "external_id": f"ext-{i % 7 + 1}",
                "is_admin": "true" if i % 7 == 0 else "false",
                "message": f"message {i + 1}",
                "created_at": stream.started_at + timedelta(seconds=seconds * i / max(1, chat_messages)),
            }
        )
    if with_qos:
        offset = 0.0
        while offset <= seconds:
            stream.qos.append(
                {
                    "frame_rate": 30.0,
                    "bitrate_video": float(2_500_000 + rng.randint(-50_000, 50_000)),
                    "bitrate_audio": 128_000.0,
                    "packet_loss": 0.0,
                    "status": 0,
                    "timestamp": stream.started_at + timedelta(seconds=offset),
                }
            )
            offset += QOS_EVERY


def pad_random(path: Path, size: int) -> None:
    """Append random bytes to a file until it holds `size` bytes (a bigger file is left as it is).

    The clip stays at the start, so the probe still finds the video; the padding is fresh random bytes
    (nothing on a copy path compresses them).
    """
    left = size - path.stat().st_size
    with open(path, "ab") as out:
        while left > 0:
            block = os.urandom(min(left, _PAD_BLOCK))
            out.write(block)
            left -= len(block)


async def broadcast(app: ControlApp, request: Request, params: dict[str, str]) -> Resp:
    """POST /_emulator/live/events/{id}/broadcast {seconds, stream_seconds, chat_messages, qos, size_bytes}.

    The answer is {stream_id, video_id}. stream_seconds (default: seconds) is the stream's length as its
    timestamps, chat and QoS tell, up to 7 days: a long broadcast is simulated (set in the past), while the
    recording stays a clip of `seconds`. size_bytes (a test and benchmark hook): the recording's stored file
    is the clip followed by random bytes up to that size; its file_size and md5 are the whole file's.
    """
    emu = app.emu
    ws = app._workspace(request)
    event_id = parse_id(params["event_id"])
    f = Fields(await app._body(request, optional=True))
    seconds = f.number("seconds")
    stream_seconds = f.number("stream_seconds")
    chat_messages = f.integer("chat_messages", minimum=0)
    with_qos = f.boolean("qos")
    size_bytes = f.integer("size_bytes", minimum=1)
    if size_bytes is not None and size_bytes > MAX_SIZE_BYTES:
        f.add("size_bytes", "range", f"size_bytes <= {MAX_SIZE_BYTES}")
    if seconds is not None and not 0 < seconds <= MAX_SECONDS:
        f.add("seconds", "range", f"0 < seconds <= {MAX_SECONDS}")
    if stream_seconds is not None and not 0 < stream_seconds <= MAX_STREAM_SECONDS:
        f.add("stream_seconds", "range", f"0 < stream_seconds <= {MAX_STREAM_SECONDS}")
    f.check()
    seconds = seconds or 10.0
    with emu.lock:
        event = store(ws).events.get(event_id)
        if event is None:
            raise not_found("event")
        target = resolve_parent(ws, event.record_parent_id or event.parent_id)
        if target is None:
            raise folder_missing("record.parent_id")
        stream = _reserve(event)
    path = emu.new_file(ws, suffix=".mp4")
    try:
        await asyncio.to_thread(make_clip, path, seconds, seed=len(event.streams))
        if size_bytes is not None:
            await asyncio.to_thread(pad_random, path, size_bytes)
        digest = await asyncio.to_thread(md5_file, path)
    except BaseException:
        path.unlink(missing_ok=True)
        with emu.lock:
            stream.status = "pending"
        raise
    with emu.lock:
        span = stream_seconds or seconds
        _fill(stream, span, chat_messages or 0, with_qos is not False, len(event.streams))
        meta = {"event_id": event.id, "stream_id": stream.id}
        video = emu.uploads.store_recording(ws, target, event.name, path, digest, meta)
    return Resp(200, {"stream_id": stream.id, "video_id": video.id})


async def drm_license(app: ControlApp, request: Request, _: dict[str, str]) -> Resp:
    """POST /_emulator/drm/license {video_id, project_id?, ip?, user_agent?, type?}: the 3.3 decision."""
    ws = app._workspace(request)
    f = Fields(await app._body(request))
    video_id = f.ident("video_id", required=True)
    project_id = f.ident("project_id")
    ip = f.string("ip") or "127.0.0.1"
    user_agent = f.string("user_agent") or "videoferry-emulator"
    kind = f.string("type") or "widevine"
    f.check()
    with app.emu.lock:
        video = ws.videos.get(video_id or "")
        if video is None:
            raise not_found("video")
        cfg = callback_for(ws, project_id or video.project_id)
        if cfg is None:
            raise not_found("drm auth")
    return Resp(200, await license_request(cfg, video.id, ip, user_agent, kind))


async def create_token(app: ControlApp, request: Request, _: dict[str, str]) -> Resp:
    """POST /_emulator/tokens {project_ids?, owner?, read_only?}: another token of the caller's workspace."""
    ws = app._workspace(request)
    f = Fields(await app._body(request, optional=True))
    raw_ids = f.strings("project_ids")
    owner = f.boolean("owner")
    read_only = f.boolean("read_only") is True
    project_ids = [parse_id(p) for p in raw_ids] if raw_ids is not None else None
    for i, project_id in enumerate(project_ids or []):
        if project_id not in ws.projects:
            f.add(f"project_ids[{i}]", "not exists", "existing project id")
    f.check()
    token = secrets.token_hex(20)
    with app.emu.lock:
        scopes(ws)[token] = TokenScope(
            frozenset(project_ids) if project_ids is not None else None, owner is not False, read_only
        )
        app.emu.tokens[token] = ws
    answer = {"token": token, "project_ids": project_ids, "owner": owner is not False, "read_only": read_only}
    return Resp(200, answer)


def control_routes(app: ControlApp) -> list[tuple[str, dict[str, ControlHandler]]]:
    """The control calls of this module, bound to the control app."""

    def bind(fn: Callable[[ControlApp, Request, dict[str, str]], Awaitable[Resp]]) -> ControlHandler:
        async def handler(request: Request, params: dict[str, str]) -> Resp:
            return await fn(app, request, params)

        return handler

    return [
        ("/_emulator/live/events/{event_id}/broadcast", {"POST": bind(broadcast)}),
        ("/_emulator/drm/license", {"POST": bind(drm_license)}),
        ("/_emulator/tokens", {"POST": bind(create_token)}),
    ]


# ---------------------------------------------------------------------------------------------- posters


async def _fetch_image(url: str) -> tuple[bytes, str] | None:
    try:
        async with httpx.AsyncClient(timeout=POSTER_TIMEOUT, follow_redirects=True) as client:
            response = await client.get(url)
    except (httpx.HTTPError, OSError, ValueError):
        return None
    if response.status_code != 200:
        return None
    body = response.content
    for magic, suffix in _IMAGES:
        if body.startswith(magic):
            return body, suffix
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return body, ".webp"
    return None


async def upload_poster(ctx: Ctx) -> Resp:
    """POST /v2/poster with X-Event-ID and X-Poster-URL: fetched now; the event's poster links change."""
    headers = ctx.request.headers
    raw_event = headers.get("x-event-id", "").strip()
    url = headers.get("x-poster-url", "").strip()
    bad = []
    if not raw_event:
        bad.append(Invalid("X-Event-ID", "required", "event id"))
    if not url:
        bad.append(Invalid("X-Poster-URL", "required", "http or https URL of an image"))
    elif not url.lower().startswith(("http://", "https://")):
        bad.append(Invalid("X-Poster-URL", "url", "http or https URL of an image"))
    event_id = parse_id(raw_event) if raw_event else None
    if bad:
        raise validation(*bad)
    with ctx.emu.lock:
        found = store(ctx.ws).events.get(event_id or "")
        if found is None:
            raise not_exists("X-Event-ID", "existing event id")
        require_project(ctx, found.project_id)
    fetched = await _fetch_image(url)
    if fetched is None:
        raise validation(
            Invalid("X-Poster-URL", "url", "a reachable http(s) URL answering 200 with an image")
        )
    body, suffix = fetched
    path = ctx.emu.new_file(ctx.ws, suffix=suffix)
    await asyncio.to_thread(path.write_bytes, body)
    base_url = ctx.emu.base_url
    with ctx.emu.lock:
        event = store(ctx.ws).events.get(event_id or "")
        if event is None:
            path.unlink(missing_ok=True)
            raise not_exists("X-Event-ID", "existing event id")
        poster_id = new_id()
        poster: dict[str, Any] = default_poster(event, base_url)
        poster["id"] = poster_id
        for size in ("original", "md", "sm", "xs"):
            poster[size] = f"{base_url}/posters/{poster_id}/{size}{suffix}"
        event.poster = poster
        event.updated_at = utcnow()
    return Resp(200, {"data": poster})


def poster_routes() -> list[Route]:
    """The upload host's /v2/poster."""
    return [route("/v2/poster", {"POST": upload_poster})]

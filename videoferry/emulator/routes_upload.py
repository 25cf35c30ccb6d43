"""Thin routes of the upload host: /v2/init, /v2/video and the tus upload endpoint (4.2)."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.errors import Invalid, io_error, not_ready, validation
from videoferry.emulator.files import BodyResult, stream_body
from videoferry.emulator.ids import parse_id
from videoferry.emulator.scopes import require_parent, require_videos
from videoferry.emulator.state import UploadSession
from videoferry.emulator.validation import Fields, read_json
from videoferry.emulator.views import QUALITIES, upload_result

UPLOAD_TYPES = ("video", "attachment", "replace")
#: The preview clip's quality when init's preview names none (the spec lists the values, not a default).
PREVIEW_QUALITY = "360p"
TUS = {"Tus-Resumable": "1.0.0"}
OFFSET_TYPE = "application/offset+octet-stream"


def _preview(f: Fields, kind: str | None) -> dict[str, Any] | None:
    """init's `preview` {start, length, quality?}: the preview clip to make (type video or replace)."""
    box = f.obj("preview")
    if box is None:
        return None
    start = box.number("start", required=True, minimum=0)
    length = box.number("length", required=True)
    if length is not None and length <= 0:
        box.add("length", "min", "number > 0")
    quality = box.oneof("quality", tuple(q for q, _ in QUALITIES)) or PREVIEW_QUALITY
    if kind == "attachment":
        f.add("preview", "excluded_if", "type video or replace (an attachment has no preview clip)")
    if start is None or length is None or length <= 0:
        return None
    return {"start": start, "length": length, "quality": quality}


async def init_upload(ctx: Ctx) -> Resp:
    """POST /v2/init: {data: {id, endpoint}}; required fields depend on the type.

    `filesize` is what tus needs (spec: "required for tus"): without it the session takes a plain POST
    of the whole file, and a tus PATCH is refused. `preview` asks for a preview clip of the video.
    """
    f = Fields(await read_json(ctx.request))
    kind = f.oneof("type", UPLOAD_TYPES, required=True)
    parent_id = f.ident("parent_id")
    title = f.string("title")
    video_id = f.ident("video_id")
    # init-replace-field: type replace names its video `replace_video_id` (the header's name), not video_id.
    replace_field = "replace_video_id" if ctx.ws.variants.has("init-replace-field") else "video_id"
    if kind == "replace":
        video_id = f.ident(replace_field) if replace_field != "video_id" else video_id
    filesize = f.integer("filesize", minimum=1)
    filename = f.string("filename")
    subtitle = f.string("subtitle")
    description = f.string("description")
    f.string("client_ip")
    preview = _preview(f, kind)
    if kind == "video":
        if parent_id is None:
            f.add("parent_id", "required_if", "type video")
        if title is None or not title.strip():
            f.add("title", "required_if", "type video")
    elif kind in ("attachment", "replace") and video_id is None:
        f.add("video_id" if kind == "attachment" else replace_field, "required_if", f"type {kind}")
    f.check()
    assert kind is not None
    require_parent(ctx, parent_id if kind == "video" else None)
    require_videos(ctx, video_id if kind != "video" else None)
    replaced = ctx.ws.videos.get(video_id) if kind == "replace" and video_id is not None else None
    if replaced is not None and replaced.path is None and ctx.ws.variants.has("replace-needs-bytes"):
        raise not_ready(replace_field, "a video whose upload is complete")
    session = ctx.emu.uploads.init_upload(
        ctx.ws,
        kind=kind,
        parent_id=parent_id,
        title=title,
        video_id=video_id,
        filesize=filesize,
        filename=filename,
        subtitle=subtitle,
        description=description,
        preview=preview,
    )
    # init-session-id: the answer names the upload session, not the video (spec 2.14 calls it a session).
    answer_id = session.id
    if ctx.ws.variants.has("init-session-id"):
        answer_id = str(uuid.uuid5(uuid.NAMESPACE_URL, session.secret))
    return Resp(200, {"data": {"id": answer_id, "endpoint": ctx.emu.uploads.endpoint_of(session)}})


def _trim_header(raw: str) -> tuple[float, float | None] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    start, length = value.get("start", 0), value.get("length")
    if isinstance(start, bool) or not isinstance(start, int | float) or start < 0:
        return None
    if length is not None and (
        isinstance(length, bool) or not isinstance(length, int | float) or length <= 0
    ):
        return None
    return float(start), (float(length) if length is not None else None)


class _Headers:
    """Request headers decoded as the workspace's service decodes them (latin-1, or UTF-8 by variant)."""

    def __init__(self, ctx: Ctx) -> None:
        self._raw = ctx.request.headers
        self._variants = ctx.ws.variants

    def get(self, name: str, default: str = "") -> str:
        value = self._raw.get(name)
        if value is None:
            return default
        return self._variants.header_text(value.encode("latin-1"))

    def __contains__(self, name: str) -> bool:
        return name in self._raw

    def __getitem__(self, name: str) -> str:
        if name not in self._raw:
            raise KeyError(name)
        return self.get(name)


async def upload_video(ctx: Ctx) -> Resp:
    """POST /v2/video: metadata in headers, the file as the raw body or fetched from X-Video-URL."""
    headers = _Headers(ctx)
    bad: list[Invalid] = []
    parent_raw = headers.get("x-parent-id", "").strip()
    title = headers.get("x-video-title", "")
    url = headers.get("x-video-url", "").strip() or None
    if not parent_raw:
        bad.append(Invalid("X-Parent-ID", "required", "project or folder id"))
    if not title.strip():
        bad.append(Invalid("X-Video-Title", "required", "string"))
    trim = None
    if "x-video-trim" in headers:
        trim = _trim_header(headers["x-video-trim"])
        if trim is None:
            bad.append(Invalid("X-Video-Trim", "json", '{"start": seconds, "length": seconds}'))
    if url is not None and not url.lower().startswith(("http://", "https://")):
        bad.append(Invalid("X-Video-URL", "url", "http or https URL"))
    parent_id = parse_id(parent_raw) if parent_raw else None
    replace_raw = headers.get("x-replace-video-id", "").strip()
    replace_id = parse_id(replace_raw) if replace_raw else None
    if bad:
        raise validation(*bad)
    if url is None and headers.get("content-length") == "0":
        raise io_error("EOF")
    assert parent_id is not None
    require_parent(ctx, parent_id)
    require_videos(ctx, replace_id)
    emu = ctx.emu
    filename = headers.get("x-file-name") or None
    video = emu.uploads.single_upload(
        ctx.ws,
        parent_id=parent_id,
        title=title,
        description=headers.get("x-video-description") if "x-video-description" in headers else None,
        filename=filename,
        replace_id=replace_id,
        trim=trim,
    )
    answer = {"data": upload_result(video, emu.base_url)}
    generation = video.generation
    if url is not None:
        ctx.processor.import_url(ctx.ws, video.id, generation, url, filename)
        return Resp(200, answer)
    path = emu.new_file(ctx.ws, filename)
    digest = hashlib.md5()
    keep = _keep(ctx, None)
    with path.open("wb") as out:
        result = await stream_body(
            ctx.request, out, digest=digest, keep=keep, bytes_per_second=ctx.faults.bytes_per_second
        )
    if not result.complete or result.written == 0:
        path.unlink(missing_ok=True)
        reason = (
            "the request body was empty"
            if result.complete
            else "the upload broke off before the whole file arrived"
        )
        emu.uploads.single_failed(ctx.ws, video.id, generation, reason)
        if result.complete:
            raise io_error("EOF")
        ctx.drop = True
        return Resp(400, io_error("unexpected EOF").body(""))
    emu.uploads.single_received(
        ctx.ws, video.id, generation, path, result.written, digest.hexdigest(), filename
    )
    return Resp(200, answer)


def _keep(ctx: Ctx, remaining: int | None) -> int | None:
    """Bytes to keep under a truncate_body fault: a share of the announced body."""
    fraction = ctx.faults.truncate_fraction
    if fraction is None:
        return None
    declared = ctx.request.headers.get("content-length")
    total = int(declared) if declared and declared.isdigit() else (remaining or 0)
    return int(total * fraction)


def _text(status: int, message: str, session: UploadSession | None = None) -> Resp:
    headers = dict(TUS)
    if session is not None:
        headers["Upload-Offset"] = str(session.offset)
    return Resp(status, raw=message.encode(), headers=headers)


def _tus_headers(session: UploadSession) -> dict[str, str]:
    headers = {**TUS, "Upload-Offset": str(session.offset), "Cache-Control": "no-store"}
    if session.filesize is not None:
        headers["Upload-Length"] = str(session.filesize)
    return headers


async def endpoint_head(ctx: Ctx) -> Resp:
    """HEAD on the upload address: Upload-Offset and Upload-Length."""
    assert ctx.session is not None
    return Resp(200, headers=_tus_headers(ctx.session))


async def endpoint_options(ctx: Ctx) -> Resp:
    """OPTIONS on the upload address: tus discovery."""
    return Resp(204, headers={**TUS, "Tus-Version": "1.0.0"})


def _after_body(ctx: Ctx, session: UploadSession, result: BodyResult, before: int) -> None:
    emu = ctx.emu
    emu.uploads.session_received(ctx.ws, session, session.offset - before)
    if session.offset == session.filesize and not session.complete:
        emu.uploads.session_complete(ctx.ws, session)
    if not result.complete:
        ctx.drop = True


async def endpoint_patch(ctx: Ctx) -> Resp:
    """PATCH on the upload address: continue from Upload-Offset; 204 with the new offset."""
    session = ctx.session
    assert session is not None
    headers = ctx.request.headers
    version = headers.get("tus-resumable")
    if version is not None and version != "1.0.0":
        return _text(412, "unsupported tus version", session)
    if headers.get("content-type", "").split(";")[0].strip().lower() != OFFSET_TYPE:
        return _text(415, f"Content-Type must be {OFFSET_TYPE}", session)
    raw_offset = headers.get("upload-offset", "")
    if not raw_offset.isdigit():
        return _text(400, "missing or invalid Upload-Offset", session)
    if session.busy:
        return _text(409, "another PATCH is in progress", session)
    if int(raw_offset) != session.offset:
        return _text(409, "mismatched Upload-Offset", session)
    if session.filesize is None:
        return _text(400, "Upload-Length unknown: tus needs filesize in POST /v2/init", session)
    remaining = session.filesize - session.offset
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > remaining:
        return _text(413, "the body goes past Upload-Length", session)
    cap = ctx.ws.variants.patch_body_cap if ctx.ws.variants.has("patch-body-cap") else None
    if cap is not None and (declared is None or not declared.isdigit() or int(declared) > cap):
        return _text(413, "request body too large", session)
    before = session.offset
    session.busy = True
    try:
        with session.path.open("r+b") as out:
            if out.seek(0, 2) > session.offset:
                out.truncate(session.offset)  # bytes past the offset (none normally) are not kept
            out.seek(session.offset)
            result = await stream_body(
                ctx.request,
                out,
                digest=session.md5,
                limit=remaining,
                keep=_keep(ctx, remaining),
                bytes_per_second=ctx.faults.bytes_per_second,
            )
            session.offset += result.written
    finally:
        session.busy = False
    _after_body(ctx, session, result, before)
    if result.overflow:
        return _text(413, "the body goes past Upload-Length", session)
    return Resp(204, headers={**TUS, "Upload-Offset": str(session.offset)})


async def endpoint_post(ctx: Ctx) -> Resp:
    """Plain POST of the whole file to the upload address (no resume: starts from zero)."""
    session = ctx.session
    assert session is not None
    if session.complete:
        return _text(409, "the upload is already complete", session)
    if session.busy:
        return _text(409, "another request is writing this upload", session)
    session.busy = True
    session.md5 = hashlib.md5()
    session.offset = 0
    try:
        with session.path.open("wb") as out:
            result = await stream_body(
                ctx.request,
                out,
                digest=session.md5,
                keep=_keep(ctx, session.filesize),
                bytes_per_second=ctx.faults.bytes_per_second,
            )
            session.offset = result.written
    finally:
        session.busy = False
    if result.complete:
        if result.written == 0:
            return Resp(400, io_error("EOF").body(""))
        session.filesize = result.written
    _after_body(ctx, session, result, 0)
    return Resp(204, headers={**TUS, "Upload-Offset": str(session.offset)})


def upload_routes() -> list[Route]:
    """The upload host's routing table."""
    return [
        route("/v2/init", {"POST": init_upload}),
        route("/v2/video", {"POST": upload_video}, operations=("video",)),
        route(
            "/upload/{secret}",
            {
                "HEAD": endpoint_head,
                "PATCH": endpoint_patch,
                "POST": endpoint_post,
                "OPTIONS": endpoint_options,
            },
            auth="endpoint",
        ),
    ]

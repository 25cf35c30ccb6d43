"""Thin routes of the API host: /v1/videos and its operations (4.1)."""

from __future__ import annotations

from typing import Any

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.backends.videos import SORTABLE
from videoferry.emulator.errors import Invalid, validation
from videoferry.emulator.files import md5_file
from videoferry.emulator.ids import parse_id
from videoferry.emulator.listing import check_page, listing, order_of, per_page_of
from videoferry.emulator.media.edit import concat, cut
from videoferry.emulator.scopes import require_filter, require_parent, require_videos, visible_projects
from videoferry.emulator.state import PRIVACY_TYPES
from videoferry.emulator.validation import Fields, read_json
from videoferry.emulator.variant_ops import commit_cut_new
from videoferry.emulator.views import QUALITIES, chapters, video_json


async def list_videos(ctx: Ctx) -> Resp:
    """GET /v1/videos: filters project_id, folder_id, title; order <field>.<asc|desc>; page, per_page."""
    query = ctx.request.query_params
    page, per_page = per_page_of(ctx)
    field, direction = order_of(ctx, SORTABLE, "created_at.desc")
    project_id = parse_id(query["project_id"]) if "project_id" in query else None
    folder_id = parse_id(query["folder_id"]) if "folder_id" in query else None
    title = query.get("title")
    check_page(page)
    for named in (project_id, folder_id):
        require_filter(ctx, named)
    variants = ctx.ws.variants
    if variants.has("ignore-title-filter"):
        title = None
    if variants.has("ignore-parent-filter"):
        project_id = folder_id = None
    per_page = min(per_page, variants.page_cap() or per_page)
    rows, total = ctx.emu.videos.list_videos(
        ctx.ws,
        page=page,
        per_page=per_page,
        order_field=field,
        order_dir=direction,
        project_id=project_id,
        folder_id=folder_id,
        title=title,
        created_before=variants.listed_before(),
        projects=visible_projects(ctx),
    )
    data = [video_json(v, ctx.emu.base_url, "list", ctx.ws.variants) for v in rows]
    return Resp(200, listing(total, page, per_page, field, direction, data))


def _video_id(ctx: Ctx) -> str:
    return parse_id(ctx.params["video_id"])


async def get_video(ctx: Ctx) -> Resp:
    """GET /v1/videos/:id."""
    require_videos(ctx, _video_id(ctx))
    video = ctx.emu.videos.get_video(ctx.ws, _video_id(ctx))
    return Resp(200, {"data": video_json(video, ctx.emu.base_url, "get", ctx.ws.variants)})


async def update_video(ctx: Ctx) -> Resp:
    """PATCH /v1/videos/:id: only passed fields change."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    changes: dict[str, Any] = {}
    title = f.string("title", notempty=True)
    if title is not None:
        changes["title"] = title
    description = f.string("description")
    if description is not None:
        changes["description"] = description
    privacy_type = f.oneof("privacy_type", PRIVACY_TYPES)
    if privacy_type is not None:
        changes["privacy_type"] = privacy_type
    domains = f.strings("privacy_domains")
    if domains is not None:
        changes["privacy_domains"] = domains
    materials = f.boolean("additional_materials_enabled")
    if materials is not None:
        changes["additional_materials_enabled"] = materials
    tags = f.strings("tags")
    if tags is not None:
        changes["tags"] = tags
    f.check()
    require_videos(ctx, video_id)
    current = ctx.emu.videos.get_video(ctx.ws, video_id)
    effective_type = changes.get("privacy_type", current.privacy_type)
    effective_domains = changes.get("privacy_domains", current.privacy_domains)
    if effective_type == "custom" and not effective_domains:
        raise validation(Invalid("privacy_domains", "notempty_if", "privacy_type custom"))
    video = ctx.emu.videos.update_video(ctx.ws, video_id, changes)
    return Resp(200, {"data": video_json(video, ctx.emu.base_url, "update", ctx.ws.variants)})


async def delete_video(ctx: Ctx) -> Resp:
    """DELETE /v1/videos/:id: permanent."""
    video_id = _video_id(ctx)
    require_videos(ctx, video_id)
    ctx.emu.videos.delete_video(ctx.ws, video_id)
    return Resp(200, {"data": {"success": True}})


async def copy_video(ctx: Ctx) -> Resp:
    """POST /v1/videos/:id/copy {parent_id?}: a full copy (folder checked before the video)."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    parent_id = f.ident("parent_id")
    f.check()
    require_videos(ctx, video_id)
    require_parent(ctx, parent_id)
    video = ctx.emu.videos.copy_video(ctx.ws, video_id, parent_id)
    return Resp(201, {"data": video_json(video, ctx.emu.base_url, "update", ctx.ws.variants)})


async def move_video(ctx: Ctx) -> Resp:
    """POST /v1/videos/:id/move {project_id, folder_id?}: same id, new place."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    project_id = f.ident("project_id", required=True)
    folder_id = f.ident("folder_id")
    f.check()
    assert project_id is not None
    require_videos(ctx, video_id)
    require_parent(ctx, project_id)
    video = ctx.emu.videos.move_video(ctx.ws, video_id, project_id, folder_id)
    return Resp(200, {"data": video_json(video, ctx.emu.base_url, "update", ctx.ws.variants)})


def _cut_body(f: Fields) -> tuple[list[tuple[float, float | None]], tuple[int, int, int, int] | None]:
    trim: list[tuple[float, float | None]] = []
    for item in f.objects("trim") or []:
        start = item.number("start", required=True, minimum=0)
        length = item.number("length")
        if length is not None and length <= 0:
            item.add("length", "min", "number > 0")
        if start is not None:
            trim.append((start, length))
    crop: tuple[int, int, int, int] | None = None
    box = f.obj("crop")
    if box is not None:
        w = box.number("w", required=True, minimum=1)
        h = box.number("h", required=True, minimum=1)
        x = box.number("x", required=True, minimum=0)
        y = box.number("y", required=True, minimum=0)
        box.oneof("quality", tuple(q for q, _ in QUALITIES))
        if None not in (w, h, x, y):
            crop = (int(w or 0), int(h or 0), int(x or 0), int(y or 0))
    if not trim and box is None:
        f.add("trim", "required_without", "trim or crop")
    return trim, crop


async def cut_video(ctx: Ctx) -> Resp:
    """POST /v1/videos/:id/cut: trim/crop written back to the same id (bytes replaced, version + 1)."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    project_id = f.ident("project_id")
    folder_id = f.ident("folder_id")
    title = f.string("title", notempty=True)
    description = f.string("description")
    trim, crop = _cut_body(f)
    f.check()
    require_videos(ctx, video_id)
    require_parent(ctx, project_id)
    require_parent(ctx, folder_id)
    emu = ctx.emu
    plan = emu.videos.prepare_cut(
        ctx.ws,
        video_id,
        trim=trim,
        crop=crop,
        project_id=project_id,
        folder_id=folder_id,
        title=title,
        description=description,
    )
    dst = emu.new_file(ctx.ws, suffix=".mp4")
    try:
        info = await ctx.processor.run(cut, plan.src, dst, trim=plan.trim, crop=plan.crop)
        digest = await ctx.processor.run(md5_file, dst)
    except ValueError as exc:
        dst.unlink(missing_ok=True)
        raise validation(Invalid("trim" if trim else "crop", "invalid", str(exc))) from None
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    if ctx.ws.variants.has("cut-new-video"):  # the result is a new video; the source stays as it was
        video = commit_cut_new(emu, ctx.ws, video_id, plan, dst, info, digest)
    else:
        video = emu.videos.commit_cut(ctx.ws, video_id, plan, dst, info, digest)
    return Resp(200, {"data": video_json(video, emu.base_url, "update", ctx.ws.variants)})


async def concat_video(ctx: Ctx) -> Resp:
    """POST /v1/videos/:id/concat: a new video with prepend + the video + append; the source is unchanged."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    ids: dict[str, list[str]] = {"prepend": [], "append": []}
    for name in ids:
        for item in f.objects(name) or []:
            other = item.ident("video_id", required=True)
            if other is not None:
                ids[name].append(other)
    f.boolean("replace")
    if not ids["prepend"] and not ids["append"] and not f.invalid:
        f.add("append", "required_without", "prepend or append with at least one video")
    f.check()
    require_videos(ctx, video_id, *ids["prepend"], *ids["append"])
    emu = ctx.emu
    paths = emu.videos.prepare_concat(ctx.ws, video_id, ids["prepend"], ids["append"])
    dst = emu.new_file(ctx.ws, suffix=".mp4")
    try:
        info = await ctx.processor.run(concat, paths, dst)
        digest = await ctx.processor.run(md5_file, dst)
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    video = emu.videos.commit_concat(ctx.ws, video_id, dst, info, digest)
    return Resp(201, {"data": video_json(video, emu.base_url, "update", ctx.ws.variants)})


async def set_chapters(ctx: Ctx) -> Resp:
    """PUT /v1/videos/:id/chapters: replace every marker (time in milliseconds)."""
    video_id = _video_id(ctx)
    f = Fields(await read_json(ctx.request))
    items: list[dict[str, Any]] = []
    raw_items = f.objects("items")
    if raw_items is None:
        f.add("items", "required", "array of {time, title}")
    for item in raw_items or []:
        time_ms = item.integer("time", required=True, minimum=0)
        title = item.string("title", required=True)
        if time_ms is not None and title is not None:
            items.append({"time": time_ms, "title": title})
    enabled = f.boolean("enabled")
    f.check()
    require_videos(ctx, video_id)
    video = ctx.emu.videos.set_chapters(ctx.ws, video_id, items, enabled)
    return Resp(200, {"data": chapters(video)})


def api_routes() -> list[Route]:
    """The API host's routing table."""
    return [
        route("/v1/videos", {"GET": list_videos}),
        route(
            "/v1/videos/{video_id}",
            {"GET": get_video, "PATCH": update_video, "DELETE": delete_video},
            operations=("update", "delete"),
            polled="video_id",
        ),
        route("/v1/videos/{video_id}/copy", {"POST": copy_video}, operations=("copy",)),
        route("/v1/videos/{video_id}/move", {"POST": move_video}, operations=("move",)),
        route("/v1/videos/{video_id}/cut", {"POST": cut_video}, operations=("cut",)),
        route("/v1/videos/{video_id}/concat", {"POST": concat_video}, operations=("concat",)),
        route("/v1/videos/{video_id}/chapters", {"PUT": set_chapters}, operations=("chapters",)),
    ]

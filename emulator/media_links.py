"""Download links (no token): originals, GET {base_url}/media/:video_id/:asset_id/original?sig=...; under
materials-downloadable additional materials, GET {base_url}/media/:video_id/materials/:id?sig=...; a done
video's poster images, GET {base_url}/media/:video_id/posters/:poster_id/<size>.jpg."""

from __future__ import annotations

import hmac
import uuid

from emulator.app import Ctx, Resp, Route, route
from emulator.errors import not_found
from emulator.ids import parse_id
from emulator.media.poster import WIDTHS, poster_jpeg
from emulator.views import material_sig, poster


async def download(ctx: Ctx) -> Resp:
    """The stored bytes of the original, when the signature and asset id are the video's current ones."""
    video = ctx.ws.videos.get(parse_id(ctx.params["video_id"]))
    if video is None or video.path is None or ctx.ws.variants.has("no-original"):
        raise not_found("media")
    original_id = str(uuid.uuid5(uuid.UUID(video.id), f"{video.version}:original"))
    if ctx.params["asset_id"] != original_id or ctx.request.query_params.get("sig") != original_id[:8]:
        raise not_found("media")
    data = video.path.read_bytes()
    return Resp(200, raw=data, headers={"content-type": "video/mp4"})


async def download_material(ctx: Ctx) -> Resp:
    """The stored bytes of an additional material, under materials-downloadable and the right signature."""
    video_id, material_id = parse_id(ctx.params["video_id"]), ctx.params["material_id"]
    sig = ctx.request.query_params.get("sig") or ""
    if not ctx.ws.variants.has("materials-downloadable") or not hmac.compare_digest(
        sig, material_sig(video_id, material_id)
    ):
        raise not_found("media")
    with ctx.emu.lock:
        video = ctx.ws.videos.get(video_id)
        listed = video is not None and any(m["id"] == material_id for m in video.additional_materials)
        stored = next(
            (s.path for s in ctx.ws.sessions.values() if s.kind == "attachment" and s.id == material_id),
            None,
        )
    if not listed or stored is None or not stored.exists():
        raise not_found("media")
    return Resp(200, raw=stored.read_bytes(), headers={"content-type": "application/octet-stream"})


async def download_poster(ctx: Ctx) -> Resp:
    """A poster image of a done video (spec 2.4: original, md, sm, xs), its first picture as a JPEG; the
    poster id of another version of the video is 404."""
    video = ctx.ws.videos.get(parse_id(ctx.params["video_id"]))
    size, _, ext = ctx.params["image"].partition(".")
    shown = poster(video, "") if video is not None else None
    if video is None or video.path is None or shown is None or ctx.params["poster_id"] != shown["id"]:
        raise not_found("media")
    if ext != "jpg" or (size != "original" and size not in WIDTHS):
        raise not_found("media")
    return Resp(200, raw=poster_jpeg(video.path, size), headers={"content-type": "image/jpeg"})


def media_routes() -> list[Route]:
    """The download routes on the API host (authenticated by the link's signature, not by a token)."""
    return [
        route("/media/{video_id}/{asset_id}/original", {"GET": download}, auth="media"),
        route("/media/{video_id}/materials/{material_id}", {"GET": download_material}, auth="media"),
        route("/media/{video_id}/posters/{poster_id}/{image}", {"GET": download_poster}, auth="media"),
    ]

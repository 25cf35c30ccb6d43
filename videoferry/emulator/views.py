"""JSON shapes of the resources: Video (list, get and update views), Asset, AudioTrack, Poster, Chapters,
AdditionalMaterial."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import datetime
from functools import lru_cache
from typing import Any

from videoferry.emulator.errors import rfc3339
from videoferry.emulator.ids import to_base58
from videoferry.emulator.state import Video
from videoferry.emulator.variants import NONE, Variants

QUALITIES = (("360p", 360), ("480p", 480), ("720p", 720), ("1080p", 1080))


def _ts(value: datetime | None) -> str | None:
    return rfc3339(value) if value is not None else None


def _sub_id(video: Video, what: str) -> str:
    return _derived_id(video.id, video.version, what)


@lru_cache(maxsize=1 << 16)
def _derived_id(video_id: str, version: int, what: str) -> str:
    """A sub-resource's id, derived from its video's id and version: the same each time it is shown, so kept
    once made (every video of a list page shows several, and the same pages are listed again and again)."""
    return str(uuid.uuid5(uuid.UUID(video_id), f"{version}:{what}"))


def _even(value: float) -> int:
    number = int(round(value))
    return max(2, number - number % 2)


def progress(video: Video) -> float:
    """Processing progress; in timed mode it reaches 100 half way, before the video is done (on purpose)."""
    if video.status == "processing" and video.processing_since is not None and video.processing_seconds > 0:
        elapsed = time.monotonic() - video.processing_since
        return round(min(100.0, 200.0 * elapsed / video.processing_seconds), 1)
    return video.progress


def assets(video: Video, base_url: str) -> list[dict[str, Any]]:
    """The original once the bytes are stored; one rendition per quality at or below the source once done."""
    if video.path is None:
        return []
    info = video.info
    original_id = _sub_id(video, "original")
    link = f"{base_url}/media/{video.id}/{original_id}/original?sig={original_id[:8]}"
    suffix = video.original_name.rsplit(".", 1)[-1].lower() if "." in video.original_name else ""
    out = [
        {
            "id": original_id,
            "video_id": video.id,
            "original_name": video.original_name,
            "file_size": video.file_size,
            "md5": video.md5,
            "filetype": suffix or (info.container if info else "bin"),
            "quality": "original",
            "resolution": f"{info.width}x{info.height}" if info else "",
            "created_at": _ts(video.stored_at),
            "updated_at": None,
            "deleted_at": None,
            "url": link,
            "download_link": link,
        }
    ]
    if video.status != "done" or info is None or info.height <= 0:
        return out
    chosen = [q for q in QUALITIES if q[1] <= info.height] or [QUALITIES[0]]
    for quality, nominal in chosen:
        height = _even(min(nominal, info.height))
        width = _even(info.width * height / info.height)
        asset_id = _sub_id(video, quality)
        share = (width * height) / max(1, info.width * info.height)
        out.append(
            {
                "id": asset_id,
                "video_id": video.id,
                "original_name": f"{quality}.mp4",
                "file_size": max(1, int(video.file_size * share)),
                "filetype": "mp4",
                "quality": quality,
                "resolution": f"{width}x{height}",
                "created_at": _ts(video.stored_at),
                "updated_at": None,
                "deleted_at": None,
                "url": f"{base_url}/media/{video.id}/{asset_id}/{quality}.mp4?sig={asset_id[:8]}",
                "download_link": "",
            }
        )
    return out


def poster(video: Video, base_url: str) -> dict[str, Any] | None:
    """The automatic poster of a done video."""
    if video.status != "done":
        return None
    poster_id = _sub_id(video, "poster")
    base = f"{base_url}/media/{video.id}/posters/{poster_id}"  # served: emulator/media_links.py
    return {
        "id": poster_id,
        "type": "image",
        "media_id": video.id,
        "video_id": video.id,
        "storage_id": video.storage_id,
        "status": "done",
        "active": True,
        "original": f"{base}/original.jpg",
        "md": f"{base}/md.jpg",
        "sm": f"{base}/sm.jpg",
        "xs": f"{base}/xs.jpg",
        "from_time": 0,
        "to_time": 0,
    }


def audio_tracks(video: Video) -> list[dict[str, Any]]:
    """One audio track for a done video with audio."""
    if video.status != "done" or video.info is None or not video.info.has_audio:
        return []
    return [
        {
            "id": _sub_id(video, "audio"),
            "language": "und",
            "label": "Default",
            "file_size": max(1, int(video.info.duration * 4000)),
            "filetype": "aac",
            "original_name": video.original_name,
            "download_link": "",
        }
    ]


def preview(video: Video) -> dict[str, Any] | None:
    """The preview clip init asked for: pending until the video is done, then done (its length cut to what
    the video holds) or error when it starts past the end. Its size and resolution are estimates."""
    asked = video.preview
    if asked is None:
        return None
    out: dict[str, Any] = {"start": asked["start"], "length": asked["length"], "quality": asked["quality"]}
    info = video.info
    if video.status != "done" or info is None:
        return {**out, "status": "pending" if video.status not in ("error", "aborted") else video.status}
    if asked["start"] >= info.duration:
        return {**out, "status": "error"}
    nominal = dict(QUALITIES)[asked["quality"]]
    height = _even(min(nominal, info.height))
    width = _even(info.width * height / max(1, info.height))
    length = round(min(asked["length"], info.duration - asked["start"]), 3)
    return {**out, "length": length, "status": "done", "resolution": f"{width}x{height}"}


def material_sig(video_id: str, material_id: str) -> str:
    """The signature part of a material's download link (materials-downloadable)."""
    return hashlib.sha256(f"{video_id}:{material_id}:material".encode()).hexdigest()[:16]


def materials(video: Video, base_url: str, variants: Variants) -> list[dict[str, Any]]:
    """The additional materials; `download_link` is "" unless the variant materials-downloadable serves
    each one's stored bytes at a signed link."""
    linked = variants.has("materials-downloadable")
    base = f"{base_url}/media/{video.id}/materials"
    return [
        {
            **m,
            "created_at": _ts(m["created_at"]),
            "download_link": f"{base}/{m['id']}?sig={material_sig(video.id, m['id'])}" if linked else "",
        }
        for m in video.additional_materials
    ]


def chapters(video: Video) -> dict[str, Any]:
    """The Chapters object {items, enabled}."""
    return {"items": [dict(c) for c in video.chapters], "enabled": video.chapters_enabled}


def video_json(video: Video, base_url: str, view: str = "get", variants: Variants = NONE) -> dict[str, Any]:
    """A Video as the list ("list"), get ("get") or update and other write responses ("update") show it
    (the workspace's variants decide what views show beyond the answers' rewriting: material links)."""
    b58 = to_base58(video.id)
    info = video.info
    marks = chapters(video)
    if view in ("list", "update"):
        marks["show_on_load"] = False
    shown = materials(video, base_url, variants)
    data: dict[str, Any] = {
        "id": video.id,
        "project_id": video.project_id,
        "folder_id": video.folder_id,
        "version": video.version,
        "title": video.title,
        "description": video.description,
        "status": video.status,
        "progress": progress(video),
        "duration": round(info.duration, 3) if info is not None else 0,
        "assets": assets(video, base_url),
        "has_audio": bool(info.has_audio) if info is not None else False,
        "chapters": marks,
        "privacy_type": video.privacy_type,
        "privacy_domains": list(video.privacy_domains),
        "poster": poster(video, base_url),
        "additional_materials": shown or None,
        "additional_materials_enabled": video.additional_materials_enabled,
        "annotation_text_enabled": False,
        "annotation_video_enabled": False,
        "created_at": _ts(video.created_at),
        "updated_at": _ts(video.updated_at),
        "play_link": f"{base_url}/play/{b58}",
        "embed_link": f"{base_url}/embed/{b58}",
        "hls_link": f"{base_url}/hls/{video.id}/master.m3u8",
        "subtitles": [],
        "subtitles_enabled": False,
    }
    tracks = audio_tracks(video)
    if tracks:
        data["audio_tracks"] = tracks
    if view in ("get", "update"):
        data.update(
            {
                "subtitle": video.subtitle,
                "privacy_email_domains": [],
                "privacy_share": {},
                "tags": list(video.tags),
                "player_id": video.player_id,
                "chat_preview": False,
                "chat_expand_on_load": False,
                "chat_inside_player": "",
            }
        )
    if view in ("get", "update") and video.preview is not None:
        data["preview"] = preview(video)
    if view == "get" and video.meta:
        data["meta"] = dict(video.meta)
    if view == "update":
        data.update(
            {
                "deleted_at": None,
                "workspace_id": video.workspace_id,
                "storage_id": video.storage_id,
                "short_id": video.short_id,
            }
        )
    return data


def upload_result(video: Video, base_url: str) -> dict[str, Any]:
    """The /v2/video answer: {id, project_id, title, status, progress, play_link}."""
    return {
        "id": video.id,
        "project_id": video.project_id,
        "title": video.title,
        "status": video.status,
        "progress": video.progress,
        "play_link": f"{base_url}/play/{to_base58(video.id)}",
    }

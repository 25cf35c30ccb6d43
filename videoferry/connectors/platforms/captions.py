"""A platform video's captions fetched as files (`migrate --captions DIR`): Vimeo's text tracks (WebVTT,
each from its link) and Wistia's captions (SRT, inline), written once under DIR to be attached to the
video as additional materials (the service's API shows no way to set a video's subtitles)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx

from videoferry.connectors.platforms.base import PlatformClient, PlatformError, need
from videoferry.connectors.platforms.vimeo import VimeoClient

#: How much of a language or name goes into a file name (letters, digits, `-`, `_` only).
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def fetch_captions(client: PlatformClient, video_id: str, into: Path) -> list[str]:
    """Write the video's captions under `into/<platform>-<id>/` (each file whole, then renamed; a file
    already there is kept: a rerun fetches nothing twice) and return their paths; none when it has none."""
    folder = into / f"{client.platform}-{_UNSAFE.sub('_', video_id)}"
    found = _vimeo(client, video_id) if isinstance(client, VimeoClient) else _wistia(client, video_id)
    paths: list[str] = []
    for name, fetch in found:
        path = folder / name
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            part = path.with_name(f".{path.name}.part")
            part.write_bytes(fetch())
            os.replace(part, path)
        paths.append(str(path))
    return paths


def _vimeo(client: PlatformClient, video_id: str) -> list[tuple[str, Callable[[], bytes]]]:
    where = f"vimeo video {video_id}'s text tracks"
    answer = client.get_json(f"/videos/{video_id}/texttracks", {"per_page": 100}, what=where)
    body = need(answer, dict, where, "body")
    tracks: list[tuple[str, Callable[[], bytes]]] = []
    for i, track in enumerate(need(body.get("data") or [], list, where, "data")):
        track = need(track, dict, where, f"data[{i}]")
        link = need(track.get("link"), str, where, f"data[{i}].link")
        language = _UNSAFE.sub("_", str(track.get("language") or "und"))
        kind = _UNSAFE.sub("_", str(track.get("type") or "captions"))
        tracks.append((f"{language}-{kind}-{i + 1}.vtt", partial(_get, link, where)))
    return tracks


def _wistia(client: PlatformClient, hashed_id: str) -> list[tuple[str, Callable[[], bytes]]]:
    where = f"wistia media {hashed_id}'s captions"
    body = need(client.get_json(f"/v1/medias/{hashed_id}/captions.json", what=where), list, where, "body")
    found: list[tuple[str, Callable[[], bytes]]] = []
    for i, caption in enumerate(body):
        caption = need(caption, dict, where, f"[{i}]")
        text = need(caption.get("text"), str, where, f"[{i}].text")
        language = _UNSAFE.sub("_", str(caption.get("language") or "und"))
        found.append((f"{language}-{i + 1}.srt", partial(str.encode, text)))
    return found


def _get(link: str, where: str) -> bytes:
    """A caption file from its link (no token: the link is signed); never the link in a message."""
    try:
        answer = httpx.get(link, follow_redirects=True, timeout=30.0)
    except httpx.TransportError as exc:
        raise PlatformError(f"{where}: the file host does not answer ({type(exc).__name__})") from None
    if answer.status_code >= 300:
        raise PlatformError(f"{where}: the file host answered {answer.status_code}")
    return answer.content

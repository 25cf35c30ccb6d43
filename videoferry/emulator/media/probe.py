"""Probing media files with PyAV: is it playable video, and its duration, size, audio and codecs."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
from av.container import InputContainer
from av.stream import Disposition
from av.video.stream import VideoStream

# Demuxers we accept as video containers. Anything else (images, text, playlists that would make FFmpeg fetch
# other files or URLs) is "not playable media". Only the local file protocol is allowed.
_FORMATS = "mov,mp4,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,3gp"
_OPEN_OPTIONS = {"format_whitelist": _FORMATS, "protocol_whitelist": "file"}
_MAX_FPS = Fraction(60)
_DEFAULT_FPS = Fraction(25)
_FIRST_FRAME_PACKETS = 512  # packets read while looking for a first decodable picture


@dataclass(frozen=True)
class MediaInfo:
    """What probe() learns about a playable media file."""

    duration: float
    width: int
    height: int
    has_audio: bool
    container: str
    video_codec: str


@dataclass(frozen=True)
class Source:
    """Probe result plus the stream parameters cut/concat need."""

    info: MediaInfo
    fps: Fraction
    audio_rate: int  # 0 when there is no audio
    audio_channels: int


def probe(path: Path) -> MediaInfo | None:
    """Describe a media file, or None when its bytes are not playable video (never raises for bad input)."""
    source = inspect_source(Path(path))
    return source.info if source else None


def open_media(path: Path) -> InputContainer:
    return av.open(str(path), mode="r", options=dict(_OPEN_OPTIONS))


def video_stream(container: InputContainer) -> VideoStream | None:
    for stream in container.streams.video:
        if stream.disposition & Disposition.attached_pic:
            continue  # cover art, not a picture track
        if stream.codec_context.width > 0 and stream.codec_context.height > 0:
            return stream
    return None


def inspect_source(path: Path) -> Source | None:
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        with open_media(path) as container:
            video = video_stream(container)
            if video is None:
                return None
            duration = _declared_duration(container)
            audio = next((s for s in container.streams.audio if s.codec_context.sample_rate > 0), None)
            info_parts: dict[str, Any] = {
                "width": video.codec_context.width,
                "height": video.codec_context.height,
                "has_audio": audio is not None,
                "container": _container_name(container, video.codec_context.name),
                "video_codec": video.codec_context.name,
            }
            fps = _frame_rate(video)
            audio_rate = audio.codec_context.sample_rate if audio is not None else 0
            audio_channels = audio.codec_context.channels if audio is not None else 0
            if not _decodes_a_picture(container, video):
                return None
        if duration is None:
            duration = _measured_duration(path)
        if duration is None or not math.isfinite(duration) or duration <= 0:
            return None
        info = MediaInfo(duration=round(duration, 6), **info_parts)
        return Source(info=info, fps=fps, audio_rate=audio_rate, audio_channels=max(0, audio_channels))
    except Exception:  # noqa: BLE001 - whatever FFmpeg or the OS raises, the bytes are not playable media
        return None


def _declared_duration(container: InputContainer) -> float | None:
    if container.duration is not None and container.duration > 0:
        return container.duration / av.time_base
    ends = [
        float(s.duration * s.time_base)
        for s in container.streams
        if s.type in ("video", "audio") and s.duration and s.time_base and s.duration > 0
    ]
    return max(ends) if ends else None


def _measured_duration(path: Path) -> float | None:
    """Duration from the packets' timestamps; from the decoded frame count when packets carry none."""
    with open_media(path) as container:
        video = video_stream(container)
        if video is None:
            return None
        first: float | None = None
        last: float | None = None
        streams = [video, *container.streams.audio]
        for packet in container.demux(*streams):
            stamp = packet.pts if packet.pts is not None else packet.dts
            if stamp is None or packet.time_base is None:
                continue
            begin = float(stamp * packet.time_base)
            end = float((stamp + (packet.duration or 0)) * packet.time_base)
            first = begin if first is None else min(first, begin)
            last = end if last is None else max(last, end)
        if first is not None and last is not None and last > first:
            return last - first
    with open_media(path) as container:
        video = video_stream(container)
        if video is None:
            return None
        frames = sum(1 for _ in decoded(container, video))
        return float(frames / _frame_rate(video)) if frames else None


def _decodes_a_picture(container: InputContainer, video: VideoStream) -> bool:
    for _ in decoded(container, video, max_packets=_FIRST_FRAME_PACKETS):
        return True
    return False


def decoded(container: InputContainer, stream: Any, max_packets: int | None = None) -> Iterator[Any]:
    """Decode one stream, skipping packets the decoder rejects and stopping where the data breaks off."""
    packets = container.demux(stream)
    count = 0
    while max_packets is None or count < max_packets:
        try:
            packet = next(packets)
        except StopIteration:
            return
        except av.FFmpegError:
            return  # damaged or cut-short container: what was read so far is all there is
        count += 1
        try:
            frames = packet.decode()
        except av.FFmpegError:
            continue
        yield from frames


def _frame_rate(video: VideoStream) -> Fraction:
    for rate in (video.average_rate, video.guessed_rate, video.base_rate):
        if rate is not None and rate > 0:
            return min(Fraction(rate).limit_denominator(1001), _MAX_FPS)
    return _DEFAULT_FPS


def _container_name(container: InputContainer, video_codec: str) -> str:
    names = container.format.name.split(",")
    if "mov" in names:
        brand = container.metadata.get("major_brand", "").strip()
        return "mov" if brand == "qt" else "mp4"
    if "matroska" in names:
        return "webm" if video_codec in ("vp8", "vp9", "av1") else "mkv"
    return names[0]

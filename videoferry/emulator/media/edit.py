"""Cut (trim segments, crop) and concat: the checks of their arguments and the output format they choose."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from videoferry.emulator.media.probe import MediaInfo, Source, inspect_source
from videoferry.emulator.media.render import Piece, render
from videoferry.emulator.media.writer import Format

_AAC_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
_END_TOLERANCE = 0.001  # seconds a segment may run past the end (float noise); it is clipped to the end


def cut(
    src: Path,
    dst: Path,
    *,
    trim: Sequence[tuple[float, float | None]] = (),
    crop: tuple[int, int, int, int] | None = None,
) -> MediaInfo:
    """Keep src's (start, length) segments in order, optionally cropped (w, h, x, y), as H.264/AAC mp4."""
    source = _require_media(Path(src), "source")
    info = source.info
    box = _check_crop(crop, info.width, info.height) if crop is not None else None
    segments = list(trim) if trim else [(0.0, None)]
    pieces = [
        Piece(Path(src), *_check_segment(index, seg, info.duration), crop=box, has_audio=info.has_audio)
        for index, seg in enumerate(segments)
    ]
    width, height = (box[0], box[1]) if box else (_even(info.width), _even(info.height))
    if width < 2 or height < 2:
        raise ValueError(f"the picture ({info.width}x{info.height}) is too small to encode")
    audio = (source.audio_rate, source.audio_channels) if info.has_audio else None
    return render(pieces, Path(dst), Format(width, height, source.fps, _audio_format(audio)))


def concat(srcs: Sequence[Path], dst: Path) -> MediaInfo:
    """Join the inputs in order (scaled to the first input's size) into one H.264/AAC mp4."""
    if not srcs:
        raise ValueError("concat needs at least one input")
    sources = [_require_media(Path(p), f"input {index}") for index, p in enumerate(srcs)]
    first = sources[0]
    width, height = _even(first.info.width), _even(first.info.height)
    if width < 2 or height < 2:
        raise ValueError(f"the first input's picture ({first.info.width}x{first.info.height}) is too small")
    with_audio = next((s for s in sources if s.info.has_audio), None)
    audio = (with_audio.audio_rate, with_audio.audio_channels) if with_audio else None
    pieces = [
        Piece(Path(p), 0.0, s.info.duration, crop=None, has_audio=s.info.has_audio)
        for p, s in zip(srcs, sources, strict=True)
    ]
    return render(pieces, Path(dst), Format(width, height, first.fps, _audio_format(audio)))


def _require_media(path: Path, what: str) -> Source:
    source = inspect_source(path)
    if source is None:
        raise ValueError(f"{what} ({path.name}) is not playable media")
    return source


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return number


def _check_segment(index: int, segment: tuple[float, float | None], duration: float) -> tuple[float, float]:
    try:
        start_value, length_value = segment
    except (TypeError, ValueError):
        raise ValueError(f"trim segment {index} must be a (start, length) pair, got {segment!r}") from None
    start = _number(start_value, f"trim segment {index} start")
    if start < 0:
        raise ValueError(f"trim segment {index} starts at {start:g}s, before the beginning of the media")
    if start >= duration:
        raise ValueError(
            f"trim segment {index} starts at {start:g}s, at or past the end of the media ({duration:.3f}s)"
        )
    if length_value is None:
        return start, duration
    length = _number(length_value, f"trim segment {index} length")
    if length <= 0:
        raise ValueError(f"trim segment {index} has length {length:g}s; it must be positive")
    end = start + length
    if end > duration + _END_TOLERANCE:
        raise ValueError(
            f"trim segment {index} ends at {end:g}s, past the end of the media ({duration:.3f}s)"
        )
    return start, min(end, duration)


def _check_crop(crop: tuple[int, int, int, int], width: int, height: int) -> tuple[int, int, int, int]:
    if isinstance(crop, str | bytes) or not isinstance(crop, Sequence) or len(crop) != 4:
        raise ValueError(f"crop must be (w, h, x, y), got {crop!r}")
    values = [_number(v, f"crop {name}") for v, name in zip(crop, "whxy", strict=True)]
    if any(v != int(v) for v in values):
        raise ValueError(f"crop values must be whole pixels, got {crop!r}")
    w, h, x, y = (int(v) for v in values)
    if w <= 0 or h <= 0:
        raise ValueError(f"crop size {w}x{h} must be positive")
    if x < 0 or y < 0 or x + w > width or y + h > height:
        raise ValueError(f"crop {w}x{h} at ({x}, {y}) lies outside the {width}x{height} frame")
    w, h = _even(w), _even(h)
    if w < 2 or h < 2:
        raise ValueError(f"crop {crop[0]}x{crop[1]} is too small to encode (at least 2x2)")
    return w, h, x, y


def _even(value: int) -> int:
    return value - value % 2


def _audio_format(audio: tuple[int, int] | None) -> tuple[int, int] | None:
    if audio is None:
        return None
    rate, channels = audio
    return (rate if rate in _AAC_RATES else 48000, 1 if channels == 1 else 2)

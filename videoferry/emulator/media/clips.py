"""Small real test clips (H.264 with moving content, an AAC tone) for the tests, the demo and broadcasts."""

from __future__ import annotations

import math
import os
import uuid
from fractions import Fraction
from pathlib import Path

import av

from videoferry.emulator.media.render import slice_audio
from videoferry.emulator.media.writer import Format, Writer


def make_clip(
    path: Path,
    seconds: float = 1.0,
    *,
    width: int = 160,
    height: int = 120,
    fps: int = 10,
    audio: bool = True,
    seed: int = 0,
) -> Path:
    """Write a small real H.264 (+ AAC tone) mp4 with moving content; `seed` varies picture and tone."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    if width < 16 or height < 16 or width % 2 or height % 2:
        raise ValueError(f"width and height must be even and at least 16, got {width}x{height}")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    path = Path(path)
    rate = 22050
    fmt = Format(width, height, Fraction(fps), (rate, 1) if audio else None)
    box = 12
    box_x, box_y = (seed * 37) % (width - box), (seed * 23) % (height - box)
    picture = (
        f"testsrc2=size={width}x{height}:rate={fps},hue=h={(seed * 47) % 360},"
        f"drawbox=x={box_x}:y={box_y}:w={box}:h={box}:color=0x{(seed * 2654435761) % 0xFFFFFF:06x}:t=fill,"
        "format=yuv420p"
    )
    tone = (
        f"sine=frequency={200 + (seed % 90) * 10}:sample_rate={rate},"
        "aformat=sample_fmts=fltp:channel_layouts=mono"
    )
    frames = max(1, round(seconds * fps))
    samples = round(frames / fps * rate)
    part = path.with_name(f".{path.name}.{uuid.uuid4().hex}.part")
    try:
        with Writer(part, fmt) as writer:
            with av.open(picture, format="lavfi") as pictures:
                for frame in pictures.decode(video=0):
                    writer.video(frame)
                    if writer.frames >= frames:
                        break
            if audio:
                with av.open(tone, format="lavfi") as tones:
                    for chunk in tones.decode(audio=0):
                        kept = slice_audio(chunk, 0, samples - writer.samples - writer.pending)
                        if kept is not None:
                            writer.audio(kept)
                        if writer.samples + writer.pending >= samples:
                            break
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return path

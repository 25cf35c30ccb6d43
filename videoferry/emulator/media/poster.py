"""A video's automatic poster: its first picture as a JPEG, at the four sizes of spec 2.4."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
from av.video.frame import VideoFrame

from videoferry.emulator.media.probe import decoded, open_media, video_stream

#: The widest each poster size is (pixels); "original" keeps the picture's own size.
WIDTHS = {"md": 640, "sm": 320, "xs": 160}
#: The picture of a video without one (an audio-only file): a grey square.
BLANK_SIDE = 16


def _first_picture(path: Path) -> VideoFrame:
    """The video's first decoded picture (a grey square when it has none)."""
    with open_media(path) as container:
        stream = video_stream(container)
        if stream is not None:
            for frame in decoded(container, stream, max_packets=50):
                return frame  # type: ignore[no-any-return]
    blank = VideoFrame(BLANK_SIDE, BLANK_SIDE, "gray")
    blank.planes[0].update(bytes([128]) * blank.planes[0].buffer_size)
    return blank


def poster_jpeg(path: Path, size: str) -> bytes:
    """The poster of the video stored at path, as JPEG bytes, at size original, md, sm or xs (KeyError for
    another size)."""
    picture = _first_picture(path)
    width = picture.width if size == "original" else min(picture.width, WIDTHS[size])
    height = max(2, round(picture.height * width / picture.width) // 2 * 2)
    width = max(2, width // 2 * 2)
    codec = av.CodecContext.create("mjpeg", "w")
    codec.width, codec.height = width, height
    codec.pix_fmt = "yuvj420p"
    codec.time_base = Fraction(1, 25)
    frame = picture.reformat(width=width, height=height, format="yuvj420p")
    packets = [*codec.encode(frame), *codec.encode(None)]
    return b"".join(bytes(p) for p in packets)

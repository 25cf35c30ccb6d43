"""The H.264 (+ AAC) mp4 writer every produced file goes through, and its output format."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
from av.audio.fifo import AudioFifo
from av.audio.frame import AudioFrame
from av.video.frame import VideoFrame


@dataclass(frozen=True)
class Format:
    """Output parameters: even frame size, constant frame rate, audio (rate, channels) or None."""

    width: int
    height: int
    fps: Fraction
    audio: tuple[int, int] | None


class Writer:
    """H.264 (+ AAC) mp4 writer with a constant frame rate and exact audio sample timing."""

    def __init__(self, path: Path, fmt: Format) -> None:
        self.frames = 0
        self.samples = 0
        self._fmt = fmt
        self._fifo = AudioFifo()
        self._audio: Any = None
        self._out = av.open(str(path), mode="w", format="mp4")
        try:
            video = self._out.add_stream("libx264", rate=fmt.fps)
            video.width, video.height, video.pix_fmt = fmt.width, fmt.height, "yuv420p"
            video.codec_context.time_base = 1 / fmt.fps
            video.codec_context.thread_count = 1  # deterministic bytes, light on CPU
            keyint = max(1, round(2 * fmt.fps))
            video.options = {"preset": "veryfast", "crf": "30", "g": str(keyint)}
            self._video = video
            if fmt.audio is not None:
                rate, channels = fmt.audio
                self._audio = self._out.add_stream("aac", rate=rate, layout=layout(channels))
                self._audio.bit_rate = 32000 * channels
        except BaseException:
            self._out.close()
            raise

    @property
    def pending(self) -> int:
        """Audio samples accepted but not yet encoded."""
        return self._fifo.samples

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self._finish()
        finally:
            self._out.close()

    def video(self, frame: VideoFrame) -> None:
        frame.pts = self.frames
        frame.time_base = 1 / self._fmt.fps
        self.frames += 1
        self._out.mux(self._video.encode(frame))

    def audio(self, chunk: AudioFrame) -> None:
        assert self._audio is not None
        chunk.pts = None
        self._fifo.write(chunk)
        for frame in self._fifo.read_many(self._audio.codec_context.frame_size or 1024):
            self._encode_audio(frame)

    def _encode_audio(self, frame: AudioFrame) -> None:
        assert self._audio is not None and self._fmt.audio is not None
        frame.pts = self.samples
        frame.time_base = Fraction(1, self._fmt.audio[0])
        self.samples += frame.samples
        self._out.mux(self._audio.encode(frame))

    def _finish(self) -> None:
        if self._audio is not None:
            rest = self._fifo.read(partial=True)
            if rest is not None and rest.samples:
                self._encode_audio(rest)
            self._out.mux(self._audio.encode(None))
        self._out.mux(self._video.encode(None))


def layout(channels: int) -> str:
    return "mono" if channels == 1 else "stereo"

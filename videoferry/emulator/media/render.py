"""Rendering pieces of sources back to back on one constant-rate timeline (pictures, audio, silence)."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
from av.audio.fifo import AudioFifo
from av.audio.frame import AudioFrame
from av.audio.resampler import AudioResampler
from av.container import InputContainer
from av.filter import Graph
from av.video.frame import PictureType, VideoFrame

from videoferry.emulator.media.probe import MediaInfo, decoded, open_media, probe, video_stream
from videoferry.emulator.media.writer import Format, Writer, layout


@dataclass(frozen=True)
class Piece:
    """A time range [start, end) of one source, optionally cropped (w, h, x, y)."""

    source: Path
    start: float
    end: float
    crop: tuple[int, int, int, int] | None
    has_audio: bool


def render(pieces: Sequence[Piece], dst: Path, fmt: Format) -> MediaInfo:
    """Write the pieces back to back, on one constant-rate timeline, atomically to dst."""
    part = dst.with_name(f".{dst.name}.{uuid.uuid4().hex}.part")
    try:
        with Writer(part, fmt) as writer:
            elapsed = 0.0
            for piece in pieces:
                elapsed += piece.end - piece.start
                frames = round(elapsed * fmt.fps) - writer.frames
                for frame in _video_frames(piece, frames, fmt):
                    writer.video(frame)
                if fmt.audio is not None:
                    samples = round(elapsed * fmt.audio[0]) - writer.samples - writer.pending
                    for chunk in _audio_chunks(piece, samples, fmt.audio):
                        writer.audio(chunk)
        os.replace(part, dst)
    finally:
        part.unlink(missing_ok=True)
    result = probe(dst)
    if result is None:
        raise RuntimeError(f"the media written to {dst.name} does not play back")
    return result


def _start_of(container: InputContainer) -> float:
    return container.start_time / av.time_base if container.start_time is not None else 0.0


def _seek(container: InputContainer, stream: Any, seconds: float) -> None:
    if seconds > 0 and stream.time_base:
        container.seek(int(seconds / stream.time_base), stream=stream, backward=True)


def _video_frames(piece: Piece, count: int, fmt: Format) -> Iterator[VideoFrame]:
    """Exactly `count` frames at fmt.fps from piece.start: each is the latest source picture at its time."""
    if count <= 0:
        return
    step = 1 / float(fmt.fps)
    slack = step / 4
    with open_media(piece.source) as container:
        stream = video_stream(container)
        if stream is None:
            raise ValueError(f"{piece.source.name} has no video stream")
        stream.codec_context.thread_count = 1
        base = _start_of(container)
        _seek(container, stream, piece.start + base)
        shaper = _Shaper(piece.crop, fmt)
        held: VideoFrame | None = None
        emitted = 0
        for index, frame in enumerate(decoded(container, stream)):
            when = (frame.time - base) if frame.time is not None else piece.start + index * step
            while emitted < count and when > piece.start + emitted * step + slack:
                yield shaper.shape(held if held is not None else frame)
                emitted += 1
            if emitted >= count:
                return
            held = frame
        if held is None:
            raise ValueError(f"{piece.source.name} has no pictures after {piece.start:g}s")
        while emitted < count:
            yield shaper.shape(held)
            emitted += 1


class _Shaper:
    """Crop, scale and convert source pictures to the output format (caching the last one)."""

    def __init__(self, crop: tuple[int, int, int, int] | None, fmt: Format) -> None:
        self._crop = crop
        self._fmt = fmt
        self._graph: Graph | None = None
        self._last: tuple[VideoFrame, VideoFrame] | None = None

    def shape(self, frame: VideoFrame) -> VideoFrame:
        if self._last is not None and self._last[0] is frame:
            return self._last[1]
        picture = self._cropped(frame) if self._crop else frame
        shaped = picture.reformat(width=self._fmt.width, height=self._fmt.height, format="yuv420p")
        shaped.pict_type = PictureType.NONE  # let the encoder choose frame types
        self._last = (frame, shaped)
        return shaped

    def _cropped(self, frame: VideoFrame) -> VideoFrame:
        assert self._crop is not None
        if self._graph is None:
            graph = Graph()
            w, h, x, y = self._crop
            graph.link_nodes(
                graph.add_buffer(
                    width=frame.width, height=frame.height, format=frame.format, time_base=Fraction(1, 1000)
                ),
                graph.add("crop", f"w={w}:h={h}:x={x}:y={y}:exact=1"),
                graph.add("buffersink"),
            ).configure()
            self._graph = graph
        frame.pts = None
        self._graph.push(frame)
        result = self._graph.pull()
        assert isinstance(result, VideoFrame)
        return result


def _audio_chunks(piece: Piece, count: int, audio: tuple[int, int]) -> Iterator[AudioFrame]:
    """Exactly `count` samples of the piece from piece.start (silence where the source has none)."""
    rate, channels = audio
    if count <= 0:
        return
    if not piece.has_audio:
        yield from _silence(count, rate, channels)
        return
    wanted = round(piece.start * rate)  # timeline index of the next sample to deliver
    stop = wanted + count
    with open_media(piece.source) as container:
        stream = container.streams.audio[0]
        stream.codec_context.thread_count = 1
        base = _start_of(container)
        _seek(container, stream, piece.start + base)
        resampler = AudioResampler(format="fltp", layout=layout(channels), rate=rate)
        position: int | None = None  # timeline index of the next resampled sample
        for frame in itertools.chain(decoded(container, stream), [None]):
            if frame is not None and position is None and frame.time is not None:
                position = round((frame.time - base) * rate)
            for chunk in resampler.resample(frame):
                if position is None:
                    position = wanted
                if position > wanted:  # the source starts late: pad with silence
                    gap = min(position, stop) - wanted
                    yield from _silence(gap, rate, channels)
                    wanted += gap
                    if wanted >= stop:
                        return
                kept = slice_audio(chunk, wanted - position, stop - wanted)
                position += chunk.samples
                if kept is not None:
                    wanted += kept.samples
                    yield kept
                if wanted >= stop:
                    return
    if wanted < stop:
        yield from _silence(stop - wanted, rate, channels)


def slice_audio(chunk: AudioFrame, skip: int, most: int) -> AudioFrame | None:
    """Samples [skip, skip + most) of chunk (None when that is empty)."""
    take = min(chunk.samples - skip, most)
    if take <= 0:
        return None
    if skip == 0 and take == chunk.samples:
        chunk.pts = None
        return chunk
    fifo = AudioFifo()
    chunk.pts = None
    fifo.write(chunk)
    if skip > 0:
        fifo.read(skip)
    return fifo.read(take)


def _silence(count: int, rate: int, channels: int) -> Iterator[AudioFrame]:
    while count > 0:
        size = min(count, 4096)
        frame = AudioFrame(format="fltp", layout=layout(channels), samples=size)
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        frame.sample_rate = rate
        count -= size
        yield frame

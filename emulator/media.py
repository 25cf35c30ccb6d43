"""Real media for the emulator and the tests: probe, cut (trim/crop), concat and small test clips (PyAV)."""

from __future__ import annotations

import itertools
import math
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
from av.stream import Disposition
from av.video.frame import PictureType, VideoFrame
from av.video.stream import VideoStream

__all__ = ["MediaInfo", "concat", "cut", "make_clip", "probe"]

# Demuxers we accept as video containers. Anything else (images, text, playlists that would make FFmpeg fetch
# other files or URLs) is "not playable media". Only the local file protocol is allowed.
_FORMATS = "mov,mp4,matroska,webm,avi,flv,mpegts,mpeg,ogg,asf,3gp"
_OPEN_OPTIONS = {"format_whitelist": _FORMATS, "protocol_whitelist": "file"}
_AAC_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
_MAX_FPS = Fraction(60)
_DEFAULT_FPS = Fraction(25)
_END_TOLERANCE = 0.001  # seconds a segment may run past the end (float noise); it is clipped to the end
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
class _Source:
    """Probe result plus the stream parameters cut/concat need."""

    info: MediaInfo
    fps: Fraction
    audio_rate: int  # 0 when there is no audio
    audio_channels: int


@dataclass(frozen=True)
class _Piece:
    """A time range [start, end) of one source, optionally cropped (w, h, x, y)."""

    source: Path
    start: float
    end: float
    crop: tuple[int, int, int, int] | None
    has_audio: bool


@dataclass(frozen=True)
class _Format:
    """Output parameters: even frame size, constant frame rate, audio (rate, channels) or None."""

    width: int
    height: int
    fps: Fraction
    audio: tuple[int, int] | None


# ---------------------------------------------------------------------------------------------- probe


def probe(path: Path) -> MediaInfo | None:
    """Describe a media file, or None when its bytes are not playable video (never raises for bad input)."""
    source = _inspect(Path(path))
    return source.info if source else None


def _open(path: Path) -> InputContainer:
    return av.open(str(path), mode="r", options=dict(_OPEN_OPTIONS))


def _video_stream(container: InputContainer) -> VideoStream | None:
    for stream in container.streams.video:
        if stream.disposition & Disposition.attached_pic:
            continue  # cover art, not a picture track
        if stream.codec_context.width > 0 and stream.codec_context.height > 0:
            return stream
    return None


def _inspect(path: Path) -> _Source | None:
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        with _open(path) as container:
            video = _video_stream(container)
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
        return _Source(info=info, fps=fps, audio_rate=audio_rate, audio_channels=max(0, audio_channels))
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
    with _open(path) as container:
        video = _video_stream(container)
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
    with _open(path) as container:
        video = _video_stream(container)
        if video is None:
            return None
        frames = sum(1 for _ in _decoded(container, video))
        return float(frames / _frame_rate(video)) if frames else None


def _decodes_a_picture(container: InputContainer, video: VideoStream) -> bool:
    for _ in _decoded(container, video, max_packets=_FIRST_FRAME_PACKETS):
        return True
    return False


def _decoded(container: InputContainer, stream: Any, max_packets: int | None = None) -> Iterator[Any]:
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


# ---------------------------------------------------------------------------------------------- cut / concat


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
        _Piece(Path(src), *_check_segment(index, seg, info.duration), crop=box, has_audio=info.has_audio)
        for index, seg in enumerate(segments)
    ]
    width, height = (box[0], box[1]) if box else (_even(info.width), _even(info.height))
    if width < 2 or height < 2:
        raise ValueError(f"the picture ({info.width}x{info.height}) is too small to encode")
    audio = (source.audio_rate, source.audio_channels) if info.has_audio else None
    return _render(pieces, Path(dst), _Format(width, height, source.fps, _audio_format(audio)))


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
        _Piece(Path(p), 0.0, s.info.duration, crop=None, has_audio=s.info.has_audio)
        for p, s in zip(srcs, sources, strict=True)
    ]
    return _render(pieces, Path(dst), _Format(width, height, first.fps, _audio_format(audio)))


def _require_media(path: Path, what: str) -> _Source:
    source = _inspect(path)
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


# ---------------------------------------------------------------------------------------------- rendering


def _render(pieces: Sequence[_Piece], dst: Path, fmt: _Format) -> MediaInfo:
    """Write the pieces back to back, on one constant-rate timeline, atomically to dst."""
    part = dst.with_name(f".{dst.name}.{uuid.uuid4().hex}.part")
    try:
        with _Writer(part, fmt) as writer:
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


class _Writer:
    """H.264 (+ AAC) mp4 writer with a constant frame rate and exact audio sample timing."""

    def __init__(self, path: Path, fmt: _Format) -> None:
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
                self._audio = self._out.add_stream("aac", rate=rate, layout=_layout(channels))
                self._audio.bit_rate = 32000 * channels
        except BaseException:
            self._out.close()
            raise

    @property
    def pending(self) -> int:
        """Audio samples accepted but not yet encoded."""
        return self._fifo.samples

    def __enter__(self) -> _Writer:
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


def _layout(channels: int) -> str:
    return "mono" if channels == 1 else "stereo"


def _start_of(container: InputContainer) -> float:
    return container.start_time / av.time_base if container.start_time is not None else 0.0


def _seek(container: InputContainer, stream: Any, seconds: float) -> None:
    if seconds > 0 and stream.time_base:
        container.seek(int(seconds / stream.time_base), stream=stream, backward=True)


def _video_frames(piece: _Piece, count: int, fmt: _Format) -> Iterator[VideoFrame]:
    """Exactly `count` frames at fmt.fps from piece.start: each is the latest source picture at its time."""
    if count <= 0:
        return
    step = 1 / float(fmt.fps)
    slack = step / 4
    with _open(piece.source) as container:
        stream = _video_stream(container)
        if stream is None:
            raise ValueError(f"{piece.source.name} has no video stream")
        stream.codec_context.thread_count = 1
        base = _start_of(container)
        _seek(container, stream, piece.start + base)
        shaper = _Shaper(piece.crop, fmt)
        held: VideoFrame | None = None
        emitted = 0
        for decoded, frame in enumerate(_decoded(container, stream)):
            when = (frame.time - base) if frame.time is not None else piece.start + decoded * step
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

    def __init__(self, crop: tuple[int, int, int, int] | None, fmt: _Format) -> None:
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


def _audio_chunks(piece: _Piece, count: int, audio: tuple[int, int]) -> Iterator[AudioFrame]:
    """Exactly `count` samples of the piece from piece.start (silence where the source has none)."""
    rate, channels = audio
    if count <= 0:
        return
    if not piece.has_audio:
        yield from _silence(count, rate, channels)
        return
    wanted = round(piece.start * rate)  # timeline index of the next sample to deliver
    stop = wanted + count
    with _open(piece.source) as container:
        stream = container.streams.audio[0]
        stream.codec_context.thread_count = 1
        base = _start_of(container)
        _seek(container, stream, piece.start + base)
        resampler = AudioResampler(format="fltp", layout=_layout(channels), rate=rate)
        position: int | None = None  # timeline index of the next resampled sample
        for frame in itertools.chain(_decoded(container, stream), [None]):
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
                kept = _slice(chunk, wanted - position, stop - wanted)
                position += chunk.samples
                if kept is not None:
                    wanted += kept.samples
                    yield kept
                if wanted >= stop:
                    return
    if wanted < stop:
        yield from _silence(stop - wanted, rate, channels)


def _slice(chunk: AudioFrame, skip: int, most: int) -> AudioFrame | None:
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
        frame = AudioFrame(format="fltp", layout=_layout(channels), samples=size)
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        frame.sample_rate = rate
        count -= size
        yield frame


# ---------------------------------------------------------------------------------------------- test clips


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
    fmt = _Format(width, height, Fraction(fps), (rate, 1) if audio else None)
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
        with _Writer(part, fmt) as writer:
            with av.open(picture, format="lavfi") as pictures:
                for frame in pictures.decode(video=0):
                    writer.video(frame)
                    if writer.frames >= frames:
                        break
            if audio:
                with av.open(tone, format="lavfi") as tones:
                    for chunk in tones.decode(audio=0):
                        kept = _slice(chunk, 0, samples - writer.samples - writer.pending)
                        if kept is not None:
                            writer.audio(kept)
                        if writer.samples + writer.pending >= samples:
                            break
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return path

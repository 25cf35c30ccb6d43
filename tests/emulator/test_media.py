"""Tests for emulator.media: probing real and bogus files, trim/crop cuts, concat, and the clip maker."""

from __future__ import annotations

import random
import shutil
from fractions import Fraction
from pathlib import Path

import av
import pytest

from videoferry.emulator.media import MediaInfo, concat, cut, make_clip, probe


def _luma(
    path: Path, index: int, box: tuple[int, int, int, int] | None = None, size: tuple[int, int] | None = None
) -> list[int]:
    """Luma samples (every 4th pixel, every 4th row) of picture `index`: a (w, h, x, y) region, or scaled."""
    with av.open(str(path)) as container:
        for number, frame in enumerate(container.decode(video=0)):
            if number == index:
                if size is not None:
                    frame = frame.reformat(width=size[0], height=size[1])
                return _samples(frame, box)
    raise AssertionError(f"{path.name} has no picture {index}")


def _samples(frame: av.VideoFrame, box: tuple[int, int, int, int] | None = None) -> list[int]:
    plane = frame.planes[0]
    raw = bytes(plane)
    w, h, x, y = box or (frame.width, frame.height, 0, 0)
    return [raw[row * plane.line_size + col] for row in range(y, y + h, 4) for col in range(x, x + w, 4)]


def _distance(a: list[int], b: list[int]) -> float:
    assert len(a) == len(b)
    return sum(abs(p - q) for p, q in zip(a, b, strict=True)) / len(a)


def _nearest(picture: list[int], source: Path) -> int:
    """Index of the source picture most like `picture`."""
    with av.open(str(source)) as container:
        pictures = [_samples(frame) for frame in container.decode(video=0)]
    return min(range(len(pictures)), key=lambda i: _distance(picture, pictures[i]))


# ------------------------------------------------------------------------------------------------ probe


def test_probe_describes_a_made_clip(clip_factory):
    info = probe(clip_factory(1.5, width=192, height=108))
    assert info == MediaInfo(
        duration=pytest.approx(1.5, abs=0.01),  # type: ignore[arg-type]
        width=192,
        height=108,
        has_audio=True,
        container="mp4",
        video_codec="h264",
    )


def test_probe_sees_a_clip_without_audio(clip_factory):
    info = probe(clip_factory(1.0, audio=False))
    assert info is not None
    assert info.has_audio is False
    assert info.duration == pytest.approx(1.0, abs=0.01)


def test_probe_reads_other_containers(sample_clip, tmp_path):
    """A Matroska file with an MPEG-4 part 2 stream is media too, with its own container and codec names."""
    target = tmp_path / "other.mkv"
    with av.open(str(sample_clip)) as source, av.open(str(target), "w", format="matroska") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        for number, frame in enumerate(source.decode(video=0)):
            frame.pts, frame.time_base = number, Fraction(1, 10)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    info = probe(target)
    assert info is not None
    assert (info.container, info.video_codec, info.has_audio) == ("mkv", "mpeg4", False)
    assert info.duration == pytest.approx(2.0, abs=0.11)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(bytes(random.Random(7).getrandbits(8) for _ in range(200_000)), id="random-bytes"),
        pytest.param(b"", id="empty"),
        pytest.param(b"just some text, not a video\n" * 50, id="text"),
        pytest.param(b"#EXTM3U\n#EXTINF:10,\nhttp://198.51.100.7/a.ts\n#EXT-X-ENDLIST\n", id="playlist"),
    ],
)
def test_probe_rejects_non_media(tmp_path, content):
    path = tmp_path / "upload.mp4"
    path.write_bytes(content)
    assert probe(path) is None


def test_probe_rejects_a_truncated_mp4(sample_clip, tmp_path):
    data = sample_clip.read_bytes()
    for keep in (16, len(data) // 2):
        cut_short = tmp_path / f"short-{keep}.mp4"
        cut_short.write_bytes(data[:keep])
        assert probe(cut_short) is None, keep


def test_probe_of_a_missing_path_or_a_directory_is_none(tmp_path):
    assert probe(tmp_path / "nope.mp4") is None
    assert probe(tmp_path) is None


# ------------------------------------------------------------------------------------------------ make_clip


def test_make_clip_is_deterministic_and_seed_varies_it(tmp_path):
    first = make_clip(tmp_path / "a.mp4", 1.0, seed=3).read_bytes()
    again = make_clip(tmp_path / "b.mp4", 1.0, seed=3).read_bytes()
    other = make_clip(tmp_path / "c.mp4", 1.0, seed=4).read_bytes()
    assert first == again
    assert first != other
    assert len(first) < 100_000


def test_make_clip_rejects_odd_sizes(tmp_path):
    with pytest.raises(ValueError, match="even"):
        make_clip(tmp_path / "odd.mp4", width=161)


def test_clip_factory_gives_distinct_names(clip_factory):
    one, two = clip_factory(0.5), clip_factory(0.5)
    assert one != two
    assert one.exists() and two.exists()
    assert one.read_bytes() != two.read_bytes()


# ------------------------------------------------------------------------------------------------ cut


def test_cut_one_segment_keeps_that_part(clip_factory, tmp_path):
    source = clip_factory(4.0)
    info = cut(source, tmp_path / "out.mp4", trim=[(1.0, 1.5)])
    assert info.duration == pytest.approx(1.5, abs=0.1)
    assert (info.width, info.height, info.has_audio) == (160, 120, True)
    assert probe(tmp_path / "out.mp4") == info
    # The first kept picture is the source's picture at 1.0 s (frame 10 at 10 fps).
    assert _nearest(_luma(tmp_path / "out.mp4", 0), source) == 10


def test_cut_two_segments_in_order_and_to_the_end(clip_factory, tmp_path):
    source = clip_factory(4.0)
    out = tmp_path / "out.mp4"
    info = cut(source, out, trim=[(2.5, 0.5), (0.5, None)])
    assert info.duration == pytest.approx(0.5 + 3.5, abs=0.1)
    assert _nearest(_luma(out, 0), source) == 25
    assert _nearest(_luma(out, 5), source) == 5


def test_cut_crop_sets_size_and_keeps_the_region(clip_factory, tmp_path):
    source = clip_factory(1.0)
    out = tmp_path / "out.mp4"
    info = cut(source, out, crop=(81, 61, 40, 20))  # odd sizes are rounded down to even
    assert (info.width, info.height) == (80, 60)
    assert info.duration == pytest.approx(1.0, abs=0.1)
    region = _luma(source, 3, box=(80, 60, 40, 20))
    elsewhere = _luma(source, 3, box=(80, 60, 0, 0))
    picture = _luma(out, 3)
    assert _distance(picture, region) < _distance(picture, elsewhere)


def test_cut_with_trim_and_crop_in_place(clip_factory):
    source = clip_factory(3.0, audio=False)
    info = cut(source, source, trim=[(1.0, 1.0)], crop=(100, 100, 0, 0))
    assert probe(source) == info
    assert (info.width, info.height, info.has_audio) == (100, 100, False)
    assert info.duration == pytest.approx(1.0, abs=0.1)
    assert [p.name for p in source.parent.iterdir() if p.name.endswith(".part")] == []


@pytest.mark.parametrize(
    ("trim", "message"),
    [
        ([(-0.5, 1.0)], "before the beginning"),
        ([(2.0, None)], "past the end"),
        ([(0.5, 1.0), (1.5, 1.0)], "segment 1 ends at 2.5s, past the end"),
        ([(0.0, 0.0)], "must be positive"),
        ([("a", 1.0)], "must be a number"),
    ],
)
def test_cut_rejects_segments_outside_the_media(sample_clip, tmp_path, trim, message):
    with pytest.raises(ValueError, match=message):
        cut(sample_clip, tmp_path / "out.mp4", trim=trim)
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.parametrize(
    ("crop", "message"),
    [
        ((100, 100, 100, 0), "outside the 160x120 frame"),
        ((0, 10, 0, 0), "must be positive"),
        ((10, 10, -1, 0), "outside"),
        ((1, 1, 0, 0), "too small"),
        ((10, 10, 0), r"\(w, h, x, y\)"),
    ],
)
def test_cut_rejects_bad_crops(sample_clip, tmp_path, crop, message):
    with pytest.raises(ValueError, match=message):
        cut(sample_clip, tmp_path / "out.mp4", crop=crop)


def test_cut_of_non_media_is_a_value_error(tmp_path):
    bogus = tmp_path / "bogus.mp4"
    bogus.write_bytes(b"not a video")
    with pytest.raises(ValueError, match="not playable media"):
        cut(bogus, tmp_path / "out.mp4", trim=[(0, 1)])


# ------------------------------------------------------------------------------------------------ concat


def test_concat_sums_durations_and_scales_to_the_first(clip_factory, tmp_path):
    parts = [clip_factory(1.0), clip_factory(1.5, width=320, height=240, audio=False), clip_factory(0.5)]
    out = tmp_path / "joined.mp4"
    info = concat(parts, out)
    assert info.duration == pytest.approx(3.0, abs=0.1)
    assert (info.width, info.height, info.has_audio) == (160, 120, True)
    # Pictures 0, 10 and 25 open the three inputs (10 fps), the second one scaled down to 160x120.
    openings = [_luma(parts[0], 0), _luma(parts[1], 0, size=(160, 120)), _luma(parts[2], 0)]
    for index, expected in ((0, 0), (10, 1), (25, 2)):
        picture = _luma(out, index)
        distances = [_distance(picture, opening) for opening in openings]
        assert distances.index(min(distances)) == expected, (index, distances)


def test_concat_of_two_equals_their_sum(sample_clip, clip_factory, tmp_path):
    copy = tmp_path / "copy.mp4"
    shutil.copyfile(sample_clip, copy)
    info = concat([sample_clip, copy], tmp_path / "twice.mp4")
    assert info.duration == pytest.approx(4.0, abs=0.1)


def test_concat_errors(sample_clip, tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        concat([], tmp_path / "none.mp4")
    bogus = tmp_path / "bogus.mp4"
    bogus.write_bytes(b"\x00" * 1000)
    with pytest.raises(ValueError, match=r"input 1 \(bogus.mp4\) is not playable media"):
        concat([sample_clip, bogus], tmp_path / "out.mp4")

"""S3 prefix listings against moto's server: video files only by default, rclone globs, one line of skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from videoferry.connectors.inventory import InventoryError, read_inventory
from videoferry.connectors.s3 import S3Config, make_s3_client

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"
KEYS = [
    "event/",  # a console folder marker
    "event/day1/keynote.mp4",
    "event/day1/KEYNOTE-4K.MOV",
    "event/day1/notes.txt",
    "event/day1/cover.jpg",
    "event/day2/panel.mkv",
    "event/day2/panel.srt",
    "event/drafts/rough.mp4",
    "event/drafts/todo.md",
    "event/README",
    "elsewhere/skip.mp4",
]


@pytest.fixture()
def listing(s3_server: str, s3_bucket: str) -> tuple[str, S3Config]:
    cfg = S3Config(endpoint_url=s3_server)
    client = make_s3_client(cfg)
    for i, key in enumerate(KEYS):
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x" * i)
    return f"s3://{s3_bucket}/event/", cfg


def keys_of(uri: str, cfg: S3Config, **filters: object) -> list[str]:
    inv = read_inventory(uri, default_parent_id=PARENT, s3=cfg, **filters)  # type: ignore[arg-type]
    prefix = uri.removesuffix("event/")
    return [source.removeprefix(prefix) for source in inv.rows["source"].to_list()]


def test_by_default_only_video_files_are_taken(listing: tuple[str, S3Config]) -> None:
    uri, cfg = listing
    inv = read_inventory(uri, default_parent_id=PARENT, s3=cfg)
    taken = [s.rsplit("/", 1)[1] for s in inv.rows["source"].to_list()]
    assert taken == ["KEYNOTE-4K.MOV", "keynote.mp4", "panel.mkv", "rough.mp4"]  # any case of the extension
    assert inv.skipped is not None
    assert (inv.skipped.listed, inv.skipped.markers, inv.skipped.not_media, inv.skipped.excluded) == (
        10,
        1,
        5,
        0,
    )
    assert inv.warnings == [
        "skipped 1 folder marker objects (keys ending in /)",
        f"skipped 5 of 9 objects under {uri}: 5 not video files "
        "(README, day1/cover.jpg, day1/notes.txt, day2/panel.srt, drafts/todo.md)",
    ]
    assert inv.errors == []


def test_rclone_globs_choose_the_objects(listing: tuple[str, S3Config]) -> None:
    uri, cfg = listing
    # An include implies "- **": only what an include names. Rules see keys relative to the prefix.
    assert keys_of(uri, cfg, include=["*.mp4"]) == ["event/day1/keynote.mp4", "event/drafts/rough.mp4"]
    assert keys_of(uri, cfg, include=["/day1/**"]) == [  # cover.jpg and notes.txt refused: not videos
        "event/day1/KEYNOTE-4K.MOV",
        "event/day1/keynote.mp4",
    ]
    assert keys_of(uri, cfg, include=["*.{mp4,mov}"], ignore_case=True) == [
        "event/day1/KEYNOTE-4K.MOV",
        "event/day1/keynote.mp4",
        "event/drafts/rough.mp4",
    ]
    # Excludes alone: what they leave, of the video files.
    assert keys_of(uri, cfg, exclude=["drafts/"]) == [
        "event/day1/KEYNOTE-4K.MOV",
        "event/day1/keynote.mp4",
        "event/day2/panel.mkv",
    ]
    assert len(keys_of(uri, cfg, include=["**"])) == 4, "every video file, nothing else"
    # Include before exclude, first match wins: the exclude cannot take back what an include took.
    assert keys_of(uri, cfg, include=["*.mp4"], exclude=["drafts/**"]) == [
        "event/day1/keynote.mp4",
        "event/drafts/rough.mp4",
    ]


def test_what_a_filter_left_out_is_counted_apart(listing: tuple[str, S3Config]) -> None:
    uri, cfg = listing
    inv = read_inventory(uri, default_parent_id=PARENT, s3=cfg, exclude=["drafts/**"])
    assert inv.skipped is not None and (inv.skipped.excluded, inv.skipped.not_media) == (2, 4)
    line = inv.warnings[-1]
    assert line.startswith(f"skipped 6 of 9 objects under {uri}: 4 not video files")
    assert "2 left out by --include/--exclude" in line and line.endswith(", ...)")  # five names shown
    whole = read_inventory(uri, default_parent_id=PARENT, s3=cfg, include=["**"])
    assert whole.skipped is not None and (whole.skipped.refused, whole.skipped.not_media) == (5, 0)
    assert whole.warnings[-1] == (
        f"skipped 5 of 9 objects under {uri}: 5 not video files though --include took them, refused: the"
        " service would make each a video that ends in error and stays (an inventory file can name one to"
        " send it anyway) (README, day1/cover.jpg, day1/notes.txt, day2/panel.srt, drafts/todo.md)"
    )


def test_a_bad_pattern_or_a_filter_on_a_file_is_an_error(
    listing: tuple[str, S3Config], tmp_path: Path
) -> None:
    uri, cfg = listing
    with pytest.raises(InventoryError, match=r"--include/--exclude '\*\.\{mp4': '\{' without a closing '\}'"):
        read_inventory(uri, default_parent_id=PARENT, s3=cfg, include=["*.{mp4"])
    csv = tmp_path / "inv.csv"
    csv.write_text("source\n/m/a.mp4\n")
    with pytest.raises(InventoryError, match="choose objects of an s3://bucket/prefix/ listing"):
        read_inventory(str(csv), default_parent_id=PARENT, exclude=["*.txt"])
    assert read_inventory(str(csv), default_parent_id=PARENT).skipped is None

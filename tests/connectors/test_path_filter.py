"""rclone's filter rules: the examples of rclone's filtering docs, rule order, the video-files default."""

from __future__ import annotations

import pytest

from videoferry.connectors.path_filter import MEDIA_EXTENSIONS, FilterError, PathFilter, glob_regex, is_media

# (pattern, matches, does not match): rclone's "Filter pattern examples" table and its anchoring examples,
# paths relative to the listing's root.
RCLONE_EXAMPLES = [
    ("*.jpg", ["file.jpg", "dir/file.jpg"], ["file.png", "dir/file.png"]),
    ("/*.jpg", ["file.jpg", "file2.jpg"], ["file.png", "dir/file.jpg"]),
    ("*.{jpg,png}", ["file.jpg", "dir/file.png"], ["file.gif", "dir/file.gif"]),
    ("dir/**", ["dir/anyfile", "subdir/dir/subsubdir/anyfile"], ["file.png", "subdir/file.png"]),
    ("*.t?t", ["file.txt", "dir/file.tzt"], ["file.qxt", "dir/file.png", "file.t/t"]),
    ("*.[a-z]", ["file.a", "dir/file.b"], ["file.0", "dir/file.1"]),
    ("*.\\?\\?\\?", ["file.???", "dir/file.???"], ["file.abc", "dir/file.def"]),
    ("*.\\d\\d\\d", ["file.012", "dir/file.345"], ["file.abc", "dir/file.def", "file.\u0661\u0662\u0663"]),
    ("file.jpg", ["file.jpg", "directory/file.jpg"], ["afile.jpg", "directory/afile.jpg"]),
    ("/file.jpg", ["file.jpg"], ["afile.jpg", "directory/file.jpg"]),
    ("potato", ["potato"], ["POTATO"]),
    ("*.[!a-z]", ["file.0", "file.A"], ["file.a"]),
    ("*.[^a-z]", ["file.0"], ["file.a"]),
    ("*\\[{JP,KR,HK}\\]*", ["a [JP] b.mp4", "x/[HK].mkv"], ["a [US] b.mp4", "a JP.mp4"]),
    ("{a,b{c,d}}.mp4", ["a.mp4", "bc.mp4", "x/bd.mp4"], ["b.mp4", "bcd.mp4"]),
    ("a*b", ["ab", "axxb"], ["a/b", "ax/xb"]),
    ("a**b", ["ab", "a/x/b"], ["a/x/c"]),
    ("2024-?/*.mov", ["2024-1/x.mov", "y/2024-2/x.mov"], ["2024-10/x.mov", "2024-1/sub/x.mov"]),
    ("a.b(c)+$^|", ["a.b(c)+$^|"], ["aXb(c)+$^|", "a.bc"]),
]


@pytest.mark.parametrize(("pattern", "matches", "misses"), RCLONE_EXAMPLES)
def test_rclone_pattern_examples(pattern: str, matches: list[str], misses: list[str]) -> None:
    regex = glob_regex(pattern)
    for path in matches:
        assert regex.search(path), (pattern, path)
    for path in misses:
        assert not regex.search(path), (pattern, path)


def test_ignore_case_is_rclones_flag() -> None:
    assert glob_regex("potato", ignore_case=True).search("POTATO")
    assert PathFilter(include=["*.MP4"], ignore_case=True).takes("a.mp4")
    assert not PathFilter(include=["*.MP4"]).takes("a.mp4")


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("*.[a-z", "without a closing ']'"),
        ("a]b", "without an opening '['"),
        ("{a,b", "without a closing '}'"),
        ("a}b", "without an opening '{'"),
        ("***", "too many stars"),
        ("x\\", "escapes nothing"),
        ("*.{{jpe?g}}", "not supported"),
        ("[[:alpha:]]", "not supported"),
        ("*.[]", "empty character class"),
    ],
)
def test_unreadable_patterns_are_named(pattern: str, words: str) -> None:
    with pytest.raises(FilterError) as caught:
        PathFilter(exclude=[pattern])
    assert repr(pattern) in str(caught.value) and words in str(caught.value)


def test_includes_come_before_excludes_and_the_first_match_wins() -> None:
    # rclone processes every --include, then every --exclude, whatever order the flags were given in.
    f = PathFilter(include=["*.mp4"], exclude=["drafts/**"])
    assert f.verdict("drafts/a.mp4") == "included"  # the include matched first
    assert f.verdict("drafts/notes.txt") == "excluded"
    assert f.verdict("notes.txt") == "excluded"  # the implied "- **" after an include
    first = PathFilter(include=["drafts/keep.mp4", "*.mov"], exclude=["*.mp4"])
    assert first.takes("drafts/keep.mp4") and first.takes("x.mov") and not first.takes("y.mp4")


def test_without_include_only_video_files_fall_through() -> None:
    f = PathFilter(exclude=["drafts/**"])
    assert f.verdict("drafts/a.mp4") == "excluded"
    assert f.verdict("a.MP4") == "default"
    assert f.verdict("notes.txt") == "not media"
    assert PathFilter().verdict("cover.jpg") == "not media"
    assert not PathFilter().given and f.given
    every = PathFilter(include=["**"])
    assert every.verdict("notes.txt") == "included" and not every.takes("notes.txt"), "refused: not a video"
    assert every.takes("day1/a.MP4")


def test_directory_rules() -> None:
    # rclone: excluding "dir/" is excluding "dir/**"; including "dir/" alone matches no file.
    f = PathFilter(exclude=["old/"])
    assert f.verdict("old/a.mp4") == "excluded" and f.verdict("x/old/b.mp4") == "excluded"
    assert f.verdict("older/a.mp4") == "default"
    only_dir = PathFilter(include=["/event/"])
    assert not only_dir.takes("event/a.mp4") and not only_dir.takes("a.mp4")
    both = PathFilter(include=["/event/", "/event/**"])
    assert both.takes("event/a.mp4") and not both.takes("other/a.mp4")


def test_video_extensions() -> None:
    for name in ["a.mp4", "b.MOV", "dir/c.MkV", "d.webm", "e.m2ts", "f.mxf", "clip.final.mp4"]:
        assert is_media(name), name
    for name in ["notes.txt", "cover.jpg", "a.srt", "mp4", "dir.mp4/notes", "sound.wav", "x.mp4.part"]:
        assert not is_media(name), name
    assert {"mp4", "mov", "mkv", "webm", "avi", "m4v"} <= MEDIA_EXTENSIONS

"""Header-safe titles: printable ASCII travels as is, anything else becomes a deterministic placeholder."""

from __future__ import annotations

from videoferry.connectors.titles import (
    PLACEHOLDER_PREFIX,
    header_exact,
    header_safe_filename,
    header_safe_title,
    is_placeholder,
    placeholder_title,
    placeholder_titles,
)
from videoferry.core.tidy import MIN_TITLE_CAP, same_title, survives_tidying, tidy_text, title_cut


def test_ascii_titles_travel_unchanged() -> None:
    for title in ("Plain title", "GOPR0001", "a ~!@#$%^&*()_+{}|:<>? b"):
        assert header_safe_title(title, "k") == (title, False)


def test_other_titles_get_a_deterministic_placeholder() -> None:
    # Latin-1 too: a service may decode header bytes as UTF-8, where "é" sent as latin-1 is not "é".
    for title in ("Привет мир", "東京の夜", "party 🎉", "en–dash", "Café crème", "ÿ"):
        sent, pending = header_safe_title(title, "item-1")
        assert pending
        assert sent.startswith(PLACEHOLDER_PREFIX)
        assert sent.isascii()
        assert header_safe_title(title, "item-1")[0] == sent
    assert header_safe_title("Привет", "item-1")[0] != header_safe_title("Привет", "item-2")[0]


def test_titles_that_http_would_alter_are_pending() -> None:
    assert not header_exact(" leading space")
    assert not header_exact("trailing space ")
    assert not header_exact("line\nbreak")
    assert not header_exact("tab\there")
    assert header_safe_title("a\r\nX-Evil: 1", "k")[1]
    assert header_exact("inner  spaces ok")


def test_filenames_keep_their_extension() -> None:
    assert header_safe_filename("видео.mp4") == "_____.mp4"
    assert header_safe_filename("clip.mp4") == "clip.mp4"
    assert header_safe_filename("café.mov") == "caf_.mov"
    assert header_safe_filename("") == "upload"


def test_only_printable_ascii_is_exact() -> None:
    assert header_exact("~x y!")  # 0x20..0x7E, no edge spaces
    for ch in ("\x00", "\x1f", "\x7f", "\x80", "\xa0", "é", "\u2028", "😀"):
        assert not header_exact(f"a{ch}b")
        assert header_safe_filename(f"a{ch}b.mp4") == "a_b.mp4"


def test_the_placeholder_is_a_marker_tidying_keeps() -> None:
    """No tidying changes it (at most MIN_TITLE_CAP printable ASCII characters without whitespace), each key
    has its own, it is recognised as ours; an older ledger's 43-character placeholder cut by a cap is still
    found."""
    markers = set()
    for key in ("k", "row-17", "Доклад", "k" * 500):
        marker = placeholder_title(key)
        assert survives_tidying(marker) and len(marker) == MIN_TITLE_CAP, marker
        assert tidy_text(marker) == marker and is_placeholder(marker)
        assert placeholder_titles(key)[0] == marker
        markers.add(marker)
        legacy = placeholder_titles(key)[1]
        assert legacy.startswith("videoferry-pending-") and len(legacy) == 43 and is_placeholder(legacy)
        cut = legacy[:MIN_TITLE_CAP]
        assert is_placeholder(cut) and same_title(legacy, cut) and title_cut(legacy, cut)
        assert not same_title(placeholder_titles(key + "x")[1], cut), "another item's placeholder is not ours"
        assert not same_title(placeholder_title(key + "x"), marker)
    assert len(markers) == 4
    for title in ("videoferry", "videoferry-xyz", "Lecture", "", None, "videoferry-pending-zz"):
        assert not is_placeholder(title), title

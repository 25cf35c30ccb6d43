"""The one set of tidying rules: what a plausible service may keep of a text field we sent, and what is ours.

A service may store a field in another form than it was sent and still have stored what we asked for. Every
comparison of what was asked with what the service shows (lookups of our own creates, the finish step,
``check``, ``setup drift``) goes through the functions here, so "the same" means one thing everywhere.

| field | what a plausible service may do to it (any of these) | compared by |
|---|---|---|
| every text field | NFC; each whitespace run one space; edges trimmed; controls dropped | `same_text` |
| title | as every text field, and cut to a cap of at least 32 characters | `same_title`, `title_cut` |
| description | as every text field | `same_description` |
| tags | each as a text field; all lower-cased; duplicates, empties dropped; reordered | `same_tags` |
| chapter titles | as every text field | `same_chapters` |

Whitespace is any Unicode whitespace (tabs, newlines, NBSP, U+2000-U+200A, U+3000...) and the BOM. Two texts
are the same when their ``tidy_text`` (all of the above at once) is equal. A title is also the same when the
stored one is a tidied prefix of at least ``MIN_TITLE_CAP`` = 32 characters of the asked one: the service cut
it (``title_cut``: report it once as a warning, never send it again). The cap is 128 in the stand-in and
unknown in general. Tags: every tag lower-cased or none, duplicates dropped but never added, order free.
Chapters: the same times, each title the same text.

Not assumed: NFKC (it changes what a text says: "ﬁ" -> "fi", "①" -> "1", full-width -> ASCII, so a service
that stores user text keeps compatibility characters; NFC is the form the W3C character model recommends for
storage), case changes of titles and descriptions, an ellipsis appended to a cut title, a cap on
descriptions or chapter titles.

``same_*`` compare up to tidying: they cannot tell a service's tidying from an edit that only changes
whitespace or the normalisation form, and neither changes what a person sees.

**Titles many items could share.** A lookup finds a create by its title, so two items of one parent whose
titles a tidying service could make equal cannot be told apart by title: equal after tidying, or equal in
their first ``MIN_TITLE_CAP`` characters (a cap could cut both to the same prefix). ``title_group_key``
gives such titles one key; ``shared_title_groups`` names the (parent, key) pairs several items have. Such
items are created under a marker (an ASCII placeholder without whitespace, which no tidying changes;
``survives_tidying``) and renamed by the finish step.

Why 32: caps seen on video services are 100 characters and more (the stand-in's is 128). A service that
counts UTF-8 bytes instead of characters leaves fewer: 128 bytes of four-byte characters (emoji, many CJK
extension characters) are 32 characters. A smaller assumed cap would only group more titles (a rename each),
never lose a create; a service with a cap below 32 characters is not covered.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "MIN_TITLE_CAP",
    "same_chapter_title",
    "same_chapters",
    "same_description",
    "same_tags",
    "same_text",
    "same_title",
    "shared_title_groups",
    "survives_tidying",
    "tidy_tag",
    "tidy_text",
    "title_cut",
    "title_group_key",
]

#: The fewest characters a title cap is assumed to leave (module docstring: "Why 32").
MIN_TITLE_CAP = 32

#: Whitespace as the tidying services see it: Unicode whitespace (tabs, newlines, NBSP, the U+2000 spaces,
#: ideographic space...) and the BOM, which JavaScript's trim() removes too.
_SPACE_RUN = re.compile(r"[\s\ufeff]+")


def _drop_controls(value: str) -> str:
    """The text without control characters that are not whitespace (a sanitising service drops them)."""
    if value.isprintable():
        return value
    return "".join(ch for ch in value if ch.isspace() or unicodedata.category(ch) != "Cc")


def tidy_text(value: str) -> str:
    """The text as the most thorough plausible service keeps it: NFC, one space per whitespace run, trimmed.

    Every plausible tidying of a text leaves this form unchanged (tidy_text(t(x)) == tidy_text(x)), so two
    texts are "the same" exactly when their tidy_text is equal. Idempotent.
    """
    text = unicodedata.normalize("NFC", _drop_controls(value))
    return _SPACE_RUN.sub(" ", text).strip(" ")


def same_text(asked: str | None, stored: str | None) -> bool:
    """Whether `stored` is what a plausible service keeps of `asked` (None and "" are the same: no text)."""
    return tidy_text(asked or "") == tidy_text(stored or "")


def same_description(asked: str | None, stored: str | None) -> bool:
    """Whether the stored description is the asked one, tidied (no cap assumed on descriptions)."""
    return same_text(asked, stored)


def same_chapter_title(asked: str, stored: str) -> bool:
    """Whether the stored chapter title is the asked one, tidied (trimmed, NFC, whitespace collapsed)."""
    return same_text(asked, stored)


def _base(value: str) -> str:
    """NFD without combining marks: a cut inside a decomposed letter ("e" of "e" U+0301) is still a prefix."""
    return "".join(ch for ch in unicodedata.normalize("NFD", value) if not unicodedata.combining(ch))


def title_cut(asked: str, stored: str) -> bool:
    """Whether the service cut the title: the stored one is a shorter tidied prefix of the asked one.

    The prefix must keep at least MIN_TITLE_CAP characters. A cut title is the same title (same_title is
    true): report it once as a warning, never send it again (the service would only cut it again).
    """
    want, have = tidy_text(asked), tidy_text(stored)
    if len(have) >= len(want):
        return False
    # A cut right before a space leaves it trimmed away: the cap kept one character more than is shown.
    if len(have) + (want[len(have)] == " ") < MIN_TITLE_CAP:
        return False
    if want.startswith(have):
        return True
    # The cut may have fallen inside a letter and its combining marks (a cap counted in code points or bytes
    # of a decomposed text), leaving the letter without its mark: compare everything before the last letter
    # exactly and the last letter without marks.
    head, last = have[:-1], have[-1]
    return want.startswith(head) and _base(want[len(head)])[:1] == _base(last)[:1]


def same_title(asked: str, stored: str) -> bool:
    """Whether the stored title is the asked one as a service keeps it: tidied, or tidied and cut."""
    return tidy_text(asked) == tidy_text(stored) or title_cut(asked, stored)


def tidy_tag(tag: str) -> str:
    """One tag tidied as a text field (its case is compared separately: same_tags)."""
    return tidy_text(tag)


def _tag_counts(tags: Iterable[str], fold: Callable[[str], str]) -> Counter[str]:
    return Counter(t for t in (fold(tidy_tag(tag)) for tag in tags) if t)


def same_tags(asked: Sequence[str], stored: Sequence[str]) -> bool:
    """Whether the stored tags are the asked ones as a plausible service keeps them.

    Each tag tidied; every tag lower-cased or none; duplicates may be dropped (never added); empty tags
    dropped; order free. ["News", "news", " 2026 "] may come back as ["2026", "News", "news"] (case kept) or
    ["news", "2026"] (lower-cased, deduplicated), not as ["News", "2026"].
    """
    kept_case = _tag_counts(asked, _same_case), _tag_counts(stored, _same_case)
    lowered = _tag_counts(asked, str.lower), _tag_counts(stored, str.lower)
    all_lower = all(tag == tag.lower() for tag in kept_case[1])
    return _kept(*kept_case) or (all_lower and _kept(*lowered))


def _kept(want: Counter[str], have: Counter[str]) -> bool:
    """The same tags, none more often than asked."""
    return want.keys() == have.keys() and all(have[t] <= want[t] for t in have)


def _same_case(value: str) -> str:
    return value


def same_chapters(asked: Sequence[tuple[int, str]], stored: Sequence[tuple[int, str]]) -> bool:
    """Whether the stored chapters are the asked ones: the same times, each title by same_chapter_title.

    Chapters are (time, title) pairs with times in one unit (the service's milliseconds); order free.
    """
    if len(asked) != len(stored):
        return False
    want = sorted((time, tidy_text(title)) for time, title in asked)
    have = sorted((time, tidy_text(title)) for time, title in stored)
    return want == have


def title_group_key(title: str) -> str:
    """A key that titles a tidying service could make equal share (equal tidied, or in MIN_TITLE_CAP chars).

    The first MIN_TITLE_CAP characters of the tidied title, without combining marks (a cut inside a letter
    could drop its mark). Titles with different keys can never look the same after any assumed tidying.
    """
    return "".join(_base(ch)[:1] or ch for ch in tidy_text(title)[:MIN_TITLE_CAP])


def shared_title_groups(pairs: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The (parent, title_group_key) pairs more than one of the given (parent, title) pairs falls in.

    An item whose (parent, title_group_key(title)) is in the result must be created under a marker.
    """
    counts = Counter((parent, title_group_key(title)) for parent, title in pairs)
    return frozenset(pair for pair, n in counts.items() if n > 1)


def survives_tidying(value: str) -> bool:
    """Whether no assumed tidying changes `value`: printable ASCII, no whitespace, at most MIN_TITLE_CAP long.

    A marker title must pass this to be found again by an exact comparison whatever the service does.
    """
    return 0 < len(value) <= MIN_TITLE_CAP and value.isascii() and all("!" <= ch <= "~" for ch in value)

"""The tidying rules, property-style: seeded random texts through independently written plausible services."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable

import pytest

from videoferry.core.tidy import (
    MIN_TITLE_CAP,
    same_chapters,
    same_description,
    same_tags,
    same_title,
    shared_title_groups,
    survives_tidying,
    tidy_text,
    title_cut,
    title_group_key,
)

SEEDS = range(40)
WORDS = [
    "Lecture",
    "001",
    "part",
    "Café",
    "Доклад",
    "講義",
    "🎬",
    "naïve",
    "Ångström",
    "e\u0301te\u0301",
    "x",
]
GAPS = [" ", "  ", "\t", "\n", "\u00a0", "\u3000", " \t ", "\r\n", "\u2009"]
EDGES = ["", " ", "  ", "\t", "\n", "\u00a0 "]


def decomposed(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def random_title(rng: random.Random, words: int | None = None) -> str:
    n = words if words is not None else rng.randint(1, 8)
    parts = [rng.choice(WORDS) for _ in range(n)]
    text = rng.choice(EDGES)
    for i, word in enumerate(parts):
        text += (rng.choice(GAPS) if i else "") + (decomposed(word) if rng.random() < 0.5 else word)
    return text + rng.choice(EDGES)


# Plausible services, written here without core.tidy (a test of the rules, not of themselves).
Service = Callable[[str], str]


def go_fields(text: str) -> str:  # strings.Join(strings.Fields(s), " "): Unicode spaces, no NFC
    return " ".join(text.split())


def ascii_collapse(text: str) -> str:  # only ASCII whitespace collapsed; NBSP and U+3000 stay
    return re.sub(r"[ \t\r\n]+", " ", text).strip(" \t\r\n")


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def full(text: str) -> str:
    return " ".join(nfc(text).split())


def cap_chars(limit: int) -> Service:
    return lambda text: full(text)[:limit].rstrip()


def cap_utf8_bytes(limit: int) -> Service:
    return lambda text: full(text).encode()[:limit].decode("utf-8", "ignore")


def cap_decomposed(limit: int) -> Service:  # a service that stores NFD and counts code points
    return lambda text: " ".join(decomposed(text).split())[:limit]


SERVICES: dict[str, Service] = {
    "echo": lambda text: text,
    "nfc": nfc,
    "trim": str.strip,
    "go-fields": go_fields,
    "ascii-collapse": ascii_collapse,
    "full": full,
    "cap-128": cap_chars(128),
    "cap-32": cap_chars(MIN_TITLE_CAP),
    "bytes-128": cap_utf8_bytes(128),
    "nfd-cap-40": cap_decomposed(40),
}


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_plausible_keep_of_a_title_is_the_same_title(service: str) -> None:
    keep = SERVICES[service]
    for seed in SEEDS:
        rng = random.Random(seed)
        asked = random_title(rng, rng.randint(1, 40))
        stored = keep(asked)
        assert same_title(asked, stored), (seed, asked, stored)
        assert same_title(asked, keep(stored)), "keeping it twice changes nothing"
        # A title is cut exactly when the service kept less of it than the whole tidied title.
        assert title_cut(asked, stored) == (len(tidy_text(stored)) < len(tidy_text(asked))), (seed, stored)


def test_the_issue_titles() -> None:
    assert same_title("  Caf\u0065\u0301 ", "Café")
    assert same_title("Lecture  001\t part", "Lecture 001 part")
    assert same_title("Lecture\u00a0001\npart", "Lecture 001 part")
    assert not title_cut("Lecture  001\t part", "Lecture 001 part")
    base = "Seminar on distributed systems, week " * 4  # 148 characters
    first, second = base + "one", base + "two"
    assert first[:128] == second[:128]
    stored = first[:128]
    assert same_title(first, stored) and title_cut(first, stored)
    assert same_title(second, stored), "a cut title cannot tell the two apart: why they share a group"
    assert title_group_key(first) == title_group_key(second)


def test_other_texts_are_not_the_same() -> None:
    for seed in SEEDS:
        rng = random.Random(seed)
        asked = random_title(rng, rng.randint(2, 10))
        tidy = tidy_text(asked)
        i = rng.randrange(len(tidy))
        changed = tidy[:i] + ("Q" if tidy[i] != "Q" else "Z") + tidy[i + 1 :]
        assert not same_title(asked, changed), (seed, asked, changed)
        assert not same_title(asked, tidy + " more"), "a longer title is an edit"
        assert not same_title(asked, tidy.upper()) or tidy == tidy.upper()
        short = tidy[: MIN_TITLE_CAP - 2].rstrip()  # even with a trimmed space after it: under 32
        if len(tidy) > len(short):
            assert not same_title(asked, short), "no cap is assumed to leave fewer than 32 characters"
            assert not title_cut(asked, short)


def test_a_cut_inside_a_decomposed_letter_is_a_cut() -> None:
    asked = "x" * 39 + "e\u0301" + "tail" * 10  # NFD: the mark is the 41st code point
    stored = nfc(asked[:40])  # a service that counts code points of the decomposed text cut the mark off
    assert stored.endswith("e") and same_title(asked, stored) and title_cut(asked, stored)
    assert not same_title(asked, "x" * 39 + "f")


def test_descriptions_and_chapter_titles() -> None:
    assert same_description("Line one\n\n  line\ttwo ", "Line one line two")
    assert same_description(None, "") and same_description("  ", None)
    assert not same_description("Line one", "Line one two")
    assert same_chapters([(0, " Intro "), (95500, "De\u0301mo\tpart")], [(95500, "Démo part"), (0, "Intro")])
    assert not same_chapters([(0, "Intro")], [(1000, "Intro")])
    assert not same_chapters([(0, "Intro")], [(0, "Intro"), (5, "More")])
    assert not same_chapters([(0, "Intro")], [(0, "Outro")])


@pytest.mark.parametrize(
    ("asked", "stored", "same"),
    [
        (["News", "news", " 2026 "], ["2026", "News", "news"], True),  # kept as sent
        (["News", "news", " 2026 "], ["news", "2026"], True),  # lower-cased, deduplicated
        (["News", "news", "2026"], ["news", "news", "2026"], True),  # lower-cased, not deduplicated
        (["News", "2026"], ["2026", "news"], True),  # order free
        (["News", "news", "2026"], ["News", "2026"], False),  # a tag lost, case kept
        (["News", "2026"], ["NEWS", "2026"], False),  # upper-casing is no plausible tidying
        (["news"], ["news", "news"], False),  # a duplicate added
        (["news", ""], ["news"], True),  # an empty tag dropped
        (["Caf\u0065\u0301\u00a0bar"], ["café bar"], True),
        (["news"], ["news", "sport"], False),
        ([], [], True),
    ],
)
def test_tags(asked: list[str], stored: list[str], same: bool) -> None:
    assert same_tags(asked, stored) is same


def test_random_tag_lists_through_plausible_services() -> None:
    for seed in SEEDS:
        rng = random.Random(seed)
        asked = [random_title(rng, rng.randint(1, 2)) for _ in range(rng.randint(0, 6))]
        asked += [t.upper() for t in asked[: rng.randint(0, len(asked))]]  # case duplicates
        lowered = [" ".join(nfc(t).split()).lower() for t in asked]
        deduplicated = list(dict.fromkeys(t for t in lowered if t))
        rng.shuffle(deduplicated)
        assert same_tags(asked, deduplicated), (seed, asked, deduplicated)
        assert same_tags(asked, [full(t) for t in asked if full(t)])
        if deduplicated:
            assert not same_tags(asked, deduplicated[1:] + ["another"])


def plausible_keeps(title: str) -> set[str]:
    """What any of the services, with caps down to the assumed minimum, could store of a title."""
    out = {keep(title) for keep in SERVICES.values()}
    out |= {full(title)[:cap].rstrip() for cap in range(MIN_TITLE_CAP, 140, 7)}
    return {tidy_text(s) for s in out}


def test_titles_that_can_look_the_same_share_a_group_key() -> None:
    # Pairs made alike on purpose: a shared prefix (cut at the same cap they collide), or the same words
    # with other whitespace or normalisation.
    collisions = 0
    for seed in range(150):
        rng = random.Random(seed)
        stem = random_title(rng, rng.randint(1, 25))
        first = stem + rng.choice(GAPS) + random_title(rng, rng.randint(0, 3))
        second = (decomposed(stem) if rng.random() < 0.5 else stem) + random_title(rng, rng.randint(0, 3))
        if plausible_keeps(first) & plausible_keeps(second):
            collisions += 1
            assert title_group_key(first) == title_group_key(second), (seed, first, second)
    assert collisions > 30, "the generator must produce collisions for the property to mean anything"


def test_titles_that_cannot_look_the_same_are_told_apart() -> None:
    assert title_group_key("Lecture 01") != title_group_key("Lecture 02")
    long_a, long_b = "A" * 31 + "x" + "same tail" * 20, "A" * 31 + "y" + "same tail" * 20
    assert title_group_key(long_a) != title_group_key(long_b), "they differ within the first 32 characters"
    assert title_group_key("  Caf\u0065\u0301\t ") == title_group_key("Café")


def test_shared_title_groups_are_per_parent() -> None:
    alike = "Quarterly all-hands meeting recording, " * 4
    pairs = [
        ("p1", alike + "Q1"),
        ("p1", alike + "Q2"),  # alike in their first 128 characters: shared
        ("p2", alike + "Q3"),  # another parent: alone
        ("p1", " Intro"),
        ("p1", "Intro\u00a0"),  # equal after tidying: shared
        ("p1", "Outro"),
    ]
    shared = shared_title_groups(pairs)
    assert shared == {("p1", title_group_key(alike)), ("p1", "Intro")}
    assert ("p2", title_group_key(alike + "Q3")) not in shared


def test_markers_survive_tidying() -> None:
    assert survives_tidying("vf-0123456789abcdef")
    for value in ["", "has space", "Café", "tab\there", "x" * (MIN_TITLE_CAP + 1), "nbsp\u00a0"]:
        assert not survives_tidying(value), value
    for seed in SEEDS:
        marker = "vf-" + random.Random(seed).randbytes(14).hex()[: MIN_TITLE_CAP - 3]
        assert survives_tidying(marker)
        assert {keep(marker) for keep in SERVICES.values()} == {marker}


def test_tidy_text_is_idempotent_and_absorbs_every_service() -> None:
    for seed in SEEDS:
        rng = random.Random(seed)
        text = random_title(rng) + "\x07" + random_title(rng)
        once = tidy_text(text)
        assert tidy_text(once) == once
        assert "\x07" not in once and "  " not in once and once == once.strip()
        for keep in ("echo", "nfc", "trim", "go-fields", "ascii-collapse", "full"):
            assert tidy_text(SERVICES[keep](text)) == once

"""The copy benchmarks' own parts: the raw copy's reader hashes what it hands on; the ways take turns."""

from __future__ import annotations

import hashlib

from bench.archive_copy import ROUNDS, _LinkReader, paired_rounds


def test_the_verified_reader_hashes_every_byte_it_hands_on_in_order() -> None:
    chunks = [bytes([n]) * (1000 + n) for n in range(7)]
    digest = hashlib.md5(usedforsecurity=False)
    reader = _LinkReader(iter(chunks), digest)
    parts = []
    while part := reader.read(2500):  # parts cut across chunks, as upload_fileobj reads them
        parts.append(part)
    whole = b"".join(chunks)
    assert b"".join(parts) == whole
    assert digest.hexdigest() == hashlib.md5(whole, usedforsecurity=False).hexdigest()


def test_an_unverified_reader_hashes_nothing() -> None:
    reader = _LinkReader(iter([b"abc", b"def"]))
    assert reader.read() == b"abcdef"


def test_three_ways_take_every_place_in_turn() -> None:
    order: list[tuple[str, int]] = []
    ways = [lambda n, w=w: order.append((w, n)) for w in ("ours", "verified", "raw")]
    paired_rounds(*ways)
    # One untimed round of each (index ROUNDS), then ROUNDS rounds whose order turns by one each time.
    assert order[:3] == [("ours", ROUNDS), ("verified", ROUNDS), ("raw", ROUNDS)]
    timed = order[3:]
    assert len(timed) == 3 * ROUNDS
    firsts = [timed[3 * n][0] for n in range(ROUNDS)]
    assert firsts[:3] == ["ours", "verified", "raw"]
    for n in range(ROUNDS):
        assert sorted(w for w, m in timed[3 * n : 3 * n + 3] if m == n) == ["ours", "raw", "verified"]


def test_two_ways_alternate_ours_first_in_even_rounds() -> None:
    order: list[str] = []
    paired_rounds(lambda n: order.append(f"ours{n}"), lambda n: order.append(f"raw{n}"))
    assert order[:4] == [f"ours{ROUNDS}", f"raw{ROUNDS}", "ours0", "raw0"]
    assert order[4:6] == ["raw1", "ours1"]

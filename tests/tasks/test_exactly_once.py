"""The one exactly-once sequence on a real ledger: settle an open intent first, intent, call, outcome; a lost
answer looked up before anything is sent again (the call stands for the service's, counting its sends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.errors import NotFoundError, UnknownOutcomeError
from state.ledger import Ledger
from state.machine import OpStatus
from tasks.exactly_once import GapCheck, Intent, Lookup, NotMade, OpJournal, exactly_once, settle
from tasks.gap import Gap, GapAmbiguous
from tasks.lookup import Postponed


@pytest.fixture()
def book(tmp_path: Path) -> Iterator[tuple[Ledger, str]]:
    ledger = Ledger.open(tmp_path / "l.db")
    run = ledger.start_run("test")
    try:
        yield ledger, run
    finally:
        ledger.finish_run(run, "done")
        ledger.close()


def _journal(ledger: Ledger, run: str, key: str = "k") -> OpJournal[dict[str, str]]:
    return OpJournal(ledger, run, key, "copy", {"video_id": "v1"}, video_id="v1")


def _statuses(ledger: Ledger, key: str = "k") -> list[str]:
    return [op.status for op in ledger.ops(op_key=key)]


class Service:
    """Stands for the service's side of one create: what it made, and how often it was asked."""

    def __init__(self, *, lose_answer: bool = False, make: bool = True) -> None:
        self.sends = 0
        self.made: dict[str, str] | None = None
        self.lose_answer = lose_answer
        self.make = make

    def create(self) -> dict[str, str]:
        self.sends += 1
        if self.make:
            self.made = {"id": f"made-{self.sends}"}
        if self.lose_answer:
            raise UnknownOutcomeError("answer lost", cause_kind="timeout")
        assert self.made is not None
        return self.made

    def lookup(self, *, listing: bool = False) -> Lookup[dict[str, str]]:
        return Lookup(lambda _intent: self.made, listing=listing)


def test_intent_then_outcome(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    service = Service()
    assert exactly_once(_journal(ledger, run), service.create, lookup=service.lookup()) == {"id": "made-1"}
    (op,) = ledger.ops(op_key="k")
    assert (op.status, op.result, service.sends) == (OpStatus.DONE, {"id": "made-1"}, 1)


def test_a_lost_answer_is_looked_up_not_sent_again(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    service = Service(lose_answer=True)
    assert exactly_once(_journal(ledger, run), service.create, lookup=service.lookup()) == {"id": "made-1"}
    assert (_statuses(ledger), service.sends) == ([OpStatus.DONE], 1)


def test_a_lost_answer_that_made_nothing_is_void_and_may_be_sent_again(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    service = Service(lose_answer=True, make=False)
    with pytest.raises(NotMade):
        exactly_once(_journal(ledger, run), service.create, lookup=service.lookup())
    assert (_statuses(ledger), service.sends) == ([OpStatus.VOID], 1)


def test_a_listing_too_young_to_believe_postpones_and_keeps_the_intent(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    service = Service(lose_answer=True, make=False)
    with pytest.raises(Postponed):
        exactly_once(_journal(ledger, run), service.create, lookup=service.lookup(listing=True))
    assert _statuses(ledger) == [OpStatus.INTENT]  # a later round or run settles it first
    # The next attempt settles the open intent before anything is sent: still too young, nothing is sent.
    with pytest.raises(Postponed):
        exactly_once(_journal(ledger, run), service.create, lookup=service.lookup(listing=True))
    assert service.sends == 1


def test_an_open_intent_is_settled_before_any_new_call(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    ledger.record_op_intent(None, "copy", {"video_id": "v1"}, run_id=run, video_id="v1", op_key="k")
    service = Service()
    service.made = {"id": "made-by-the-crashed-run"}  # the crashed run's call took effect
    assert exactly_once(_journal(ledger, run), service.create, lookup=service.lookup()) == service.made
    assert (_statuses(ledger), service.sends) == ([OpStatus.DONE], 0)


def test_an_open_intent_that_made_nothing_becomes_void_then_the_call_is_made(
    book: tuple[Ledger, str],
) -> None:
    ledger, run = book
    ledger.record_op_intent(None, "copy", {"video_id": "v1"}, run_id=run, video_id="v1", op_key="k")
    service = Service()
    assert exactly_once(_journal(ledger, run), service.create, lookup=service.lookup()) == {"id": "made-1"}
    assert (_statuses(ledger), service.sends) == ([OpStatus.VOID, OpStatus.DONE], 1)


def test_a_refusal_is_failed_and_raised(book: tuple[Ledger, str]) -> None:
    ledger, run = book

    def refused() -> dict[str, str]:
        raise NotFoundError("no such video", status=404, code=400404, request_id="r-1")

    with pytest.raises(NotFoundError):
        exactly_once(_journal(ledger, run), refused)
    (op,) = ledger.ops(op_key="k")
    assert (op.status, op.error_code, op.request_id) == (OpStatus.FAILED, "400404", "r-1")


def test_a_repeatable_call_lost_is_failed_and_an_open_one_void(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    with pytest.raises(UnknownOutcomeError):
        exactly_once(_journal(ledger, run), Service(lose_answer=True).create)  # no lookup: repeatable
    assert _statuses(ledger) == [OpStatus.FAILED]
    ledger.record_op_intent(None, "copy", {"video_id": "v1"}, run_id=run, video_id="v1", op_key="j")
    (open_op,) = ledger.ops(op_key="j")
    assert settle(_journal(ledger, run, "j"), Intent(open_op.op_id, open_op.intent_at), None) is None
    assert _statuses(ledger, "j") == [OpStatus.VOID]


def _gap(*subjects: str) -> Gap:
    """A run's gap whose subjects are these op keys (as a job's wing declares them)."""
    return Gap("test", None, None, subjects=[lambda _ledger: list(subjects)])


def test_a_subject_the_gap_shows_made_is_adopted_before_any_intent(book: tuple[Ledger, str]) -> None:
    """The gap step: a lost run's result found is written as the call's intent, then found; nothing is sent,
    and the subject counts as looked up (the gap may close)."""
    ledger, run = book
    service, gap = Service(), _gap("k")
    lost_run = {"id": "made-by-the-lost-run"}
    check = GapCheck(gap, "k", lambda: lost_run)
    assert exactly_once(_journal(ledger, run), service.create, gap=check) == lost_run
    (op,) = ledger.ops(op_key="k")
    assert (op.status, op.result, service.sends) == (OpStatus.DONE, lost_run, 0)
    assert gap.complete(ledger)
    assert exactly_once(_journal(ledger, run, "k2"), service.create, gap=GapCheck(gap, "k", lambda: lost_run))
    assert service.sends == 1  # looked up once per run: a second call of the subject is made


def test_nothing_in_the_gap_lets_the_call_be_made_and_an_open_intent_skips_the_gap(
    book: tuple[Ledger, str],
) -> None:
    ledger, run = book
    service, gap = Service(), _gap("k", "open")
    looked: list[str] = []

    def nothing() -> None:
        looked.append("k")
        return None

    assert exactly_once(_journal(ledger, run), service.create, gap=GapCheck(gap, "k", nothing)) == {
        "id": "made-1"
    }
    assert (looked, _statuses(ledger), service.sends) == (["k"], [OpStatus.DONE], 1)
    _journal(ledger, run, "open").write_intent()  # an intent a crash left open: settled, not looked up
    exactly_once(
        _journal(ledger, run, "open"),
        service.create,
        lookup=service.lookup(),
        gap=GapCheck(gap, "open", nothing),
    )
    assert looked == ["k"] and not gap.complete(ledger)


def test_several_candidates_in_the_gap_write_nothing_and_keep_the_gap_open(book: tuple[Ledger, str]) -> None:
    ledger, run = book
    service, gap = Service(), _gap("k")

    def several() -> None:
        raise GapAmbiguous("k")

    with pytest.raises(GapAmbiguous):
        exactly_once(_journal(ledger, run), service.create, gap=GapCheck(gap, "k", several))
    assert (_statuses(ledger), service.sends) == ([], 0)
    assert gap.unsettled(ledger) == ["k"]

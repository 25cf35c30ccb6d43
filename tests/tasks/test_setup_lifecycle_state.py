"""An event's state in setup when the service shows none (spec 2.8 has no such field): the ledger's."""

from __future__ import annotations

from pathlib import Path

import pytest

from videoferry.connectors.client.live_models import LiveEvent
from videoferry.state.ledger import Ledger
from videoferry.tasks.setup.lifecycle import current_state, state_step

EVENT = "00000000-0000-0000-0000-00000000000e"


def test_the_service_status_first_then_the_ledger_then_unknown(tmp_path: Path) -> None:
    silent = LiveEvent.model_validate({"id": EVENT, "type": "recurring"})
    said = LiveEvent.model_validate({"id": EVENT, "type": "recurring", "status": "draft"})
    with Ledger.open(str(tmp_path / "l.db")) as book:
        assert current_state(silent, book) is None and current_state(said, book) == "draft"
        for kind, state in (("enable_event", "enabled"), ("complete_event", "completed")):
            op = book.record_op_intent(None, kind, {}, target_kind="live_event", target_id=EVENT)
            book.record_op_outcome(op, "done", {"id": EVENT})
            assert current_state(silent, book) == state
        assert current_state(said, book) == "draft"  # what the service says wins over our record


@pytest.mark.parametrize(
    ("now", "wanted", "action"),
    [
        (None, "draft", "unchanged"),
        (None, "enabled", "update"),
        ("draft", "completed", "update"),
        ("enabled", "enabled", "unchanged"),
        ("enabled", "draft", "blocked"),
        ("completed", "enabled", "blocked"),
    ],
)
def test_the_steps(now: str | None, wanted: str, action: str) -> None:
    assert state_step(now, wanted)[0] == action

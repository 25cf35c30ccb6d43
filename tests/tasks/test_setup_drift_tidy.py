"""setup drift compares what the service keeps under core.tidy: another form is no drift, an edit is."""

from __future__ import annotations

import unicodedata

from videoferry.connectors.client.live_models import LiveEvent
from videoferry.connectors.desired_state import EventSpec
from videoferry.tasks.setup.differences import event_differences


def _event(**fields: str) -> LiveEvent:
    return LiveEvent.model_validate(
        {"id": "00000000-0000-0000-0000-000000000001", "type": "one-time", **fields}
    )


def test_a_tidied_description_is_no_drift_and_an_edited_one_is() -> None:
    kept = _event(name="Room 1", description=unicodedata.normalize("NFC", "Keynote: Café day"))
    asked = unicodedata.normalize("NFD", "  Keynote:\u00a0 Café\tday ")
    assert event_differences(EventSpec("Room 1", "one-time", "p", {"description": asked}), kept) == []
    edited = EventSpec("Room 1", "one-time", "p", {"description": "Keynote: Café night"})
    assert [d[0] for d in event_differences(edited, kept)] == ["description"]

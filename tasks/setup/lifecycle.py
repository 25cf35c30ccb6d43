"""Setup's event lifecycle: its state (draft, enabled, completed) and a recurring event's next stream."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from connectors.client.live_models import LiveEvent, Stream
from connectors.desired_state import EventSpec
from state.machine import OpStatus
from tasks.lookup import Postponed

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from state.ledger import Ledger

#: The write of each wanted state (both PUT, idempotent): op kind and client method.
STATE_WRITES = {"enabled": ("enable_event", "enable"), "completed": ("complete_event", "complete")}
#: (now, wanted) pairs no call can reach (spec 3.2 shows no way back to draft, nor out of completed).
UNREACHABLE = {
    ("enabled", "draft"): "an enabled event cannot go back to draft (spec 3.2 shows no way)",
    ("completed", "draft"): "a completed event cannot go back to draft (spec 3.2 shows no way)",
    ("completed", "enabled"): "a completed event takes no streams again (spec 3.2: ingest stopped)",
}


def current_state(event: LiveEvent, ledger: Ledger | None) -> str | None:
    """The event's state: the service's `status` when it gives one (spec 2.8 shows no such field, the emulator
    adds it), else what this ledger last did to it (enable / complete), else None (not known)."""
    said = (event.model_extra or {}).get("status")
    if said in ("draft", "enabled", "completed"):
        return str(said)
    if ledger is None:
        return None
    done = [
        op
        for kind in ("enable_event", "complete_event")
        for op in ledger.ops(kind=kind, target_id=event.id, status=OpStatus.DONE)
    ]
    if not done:
        return None
    last = max(done, key=lambda op: op.op_id)
    return "completed" if last.kind == "complete_event" else "enabled"


def state_step(now: str | None, wanted: str) -> tuple[str, str]:
    """(action, reason) of moving an event from `now` (None: not known) to `wanted`: update, unchanged or
    blocked (the action names of tasks/setup/compare.py)."""
    if now == wanted or (now is None and wanted == "draft"):
        return "unchanged", ""
    blocked = UNREACHABLE.get((now or "", wanted))
    if blocked:
        return "blocked", f"not changed: {blocked}"
    return "update", ""


def stream_scheduled(ledger: Ledger | None, event: LiveEvent, when: datetime) -> bool:
    """Whether the stream at `when` is there: the event's current stream starts then, or this ledger
    scheduled it (it may have run since)."""
    stream = event.stream
    if stream is not None and stream.started_at == when:
        return True
    if ledger is None:
        return False
    done = ledger.ops(kind="create_stream", target_id=event.id, status=OpStatus.DONE)
    return any(op.params.get("started_at") == when.isoformat() for op in done)


def find_scheduled(client: VideoClient, event_id: str, when: datetime) -> Stream | None:
    """A next stream whose answer was lost: it was asked for only while the event had no pending stream, so
    it is the event's current stream when it was made; another pending one (made meanwhile by someone else)
    cannot be told from it: Postponed."""
    stream = client.live_events.get(event_id).stream
    if stream is None or not stream.is_pending:
        return None
    if stream.started_at == when:
        return stream
    raise Postponed("the event's pending stream is not the one asked for: the next one cannot be seen")


def state_params(spec: EventSpec) -> dict[str, Any]:
    """What a state write records (no secret): the wanted state."""
    return {"name": spec.name, "state": spec.state}

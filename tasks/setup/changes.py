"""Setup's changes: the actions, one object's change, the change set, and how they are shown (no secret)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from connectors.client.live_models import LiveEvent
from connectors.desired_state import EventSpec
from core.tidy import tidy_text

CREATE, UPDATE, UNCHANGED, DELETE, BLOCKED, CONFLICT = (
    "create",
    "update",
    "unchanged",
    "delete",
    "blocked",
    "conflict",
)
#: Actions that mean the service differs from the file.
DIFFERENT = frozenset({CREATE, UPDATE, DELETE, BLOCKED, CONFLICT})
#: Fields whose values are secrets: a change shows only that they change.
SECRET_FIELDS = frozenset({"key", "password", "privacy_share"})


@dataclass
class Change:
    """One object's change; `fields` are (name, now, wanted) as shown (secrets never)."""

    action: str
    kind: str  #: event, restream, codes, stream, poster, state, drm, domain
    label: str  #: how a person names the object
    where: str = ""
    fields: list[tuple[str, str, str]] = field(default_factory=list)
    reason: str = ""
    op_key: str = ""
    event: EventSpec | None = field(default=None, repr=False)
    event_id: str | None = None
    object_id: str | None = None
    send: dict[str, Any] = field(default_factory=dict, repr=False)  #: what a write sends
    spec: Any = field(default=None, repr=False)

    def line(self) -> str:
        """The text `setup plan` shows for this change (never a secret value)."""
        head = f"{self.action:9} {self.kind:8} {self.label}"
        if self.where:
            head += f"  ({self.where})"
        parts = [head]
        for name, now, wanted in self.fields:
            parts.append(f"          {name}: {now} -> {wanted}")
        if self.reason:
            parts.append(f"          {self.reason}")
        return "\n".join(parts)


@dataclass
class ChangeSet:
    """What setup would change (`setup plan` shows it, `setup up` writes it): every change, in the order they
    are applied, and the events found for the outputs."""

    changes: list[Change] = field(default_factory=list)
    found: dict[tuple[str, str], LiveEvent] = field(default_factory=dict, repr=False)
    #: (event id, batch name) -> batch id of the batches the service has (the outputs download them).
    batches: dict[tuple[str, str], str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many changes of each action."""
        out: dict[str, int] = {}
        for change in self.changes:
            out[change.action] = out.get(change.action, 0) + 1
        return out

    @property
    def differs(self) -> bool:
        """Whether the service differs from the file."""
        return any(c.action in DIFFERENT for c in self.changes)


def show(name: str, value: Any) -> str:
    if name in SECRET_FIELDS:
        return "<set>" if value else "<unset>"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "-" if value is None else str(value)


def name_key(name: str) -> str:
    """A name as a service may keep it (core.tidy.tidy_text): names tidied alike are one object's."""
    return tidy_text(name)


def shown(diffs: list[tuple[str, Any, Any]]) -> list[tuple[str, str, str]]:
    return [(n, show(n, now), show(n, wanted)) for n, now, wanted in diffs]


def change_summary(changeset: ChangeSet) -> str:
    """One line: how many of each action."""
    counts = changeset.counts()
    order = (CREATE, UPDATE, DELETE, BLOCKED, CONFLICT, UNCHANGED)
    return ", ".join(f"{counts.get(a, 0)} {a}" for a in order)


def changes_text(changeset: ChangeSet, *, show_unchanged: bool = False) -> list[str]:
    """The changes as `setup plan` shows them."""
    return [c.line() for c in changeset.changes if show_unchanged or c.action != UNCHANGED or c.reason]


def as_rows(changeset: ChangeSet) -> list[Mapping[str, Any]]:
    """The changes as plain rows (reports, artifacts): no secret values."""
    return [
        {
            "action": c.action,
            "kind": c.kind,
            "object": c.label,
            "where": c.where,
            "fields": [f[0] for f in c.fields],
        }
        for c in changeset.changes
    ]

"""How a migration ended (`MigrateOutcome`): what its runner, its dry run and its flow return."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flows.outcome import Outcome

__all__ = ["MigrateOutcome"]


@dataclass
class MigrateOutcome(Outcome):
    """How a migration ended: exit status, the reason lines, the summary, rejected rows, the report files."""

    summary: dict[str, Any] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    preview: dict[str, int] | None = None

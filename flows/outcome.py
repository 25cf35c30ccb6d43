"""How a run of a job ended (`Outcome`; `CopyOutcome` for archive and backup) and what it did not do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self

__all__ = ["CopyOutcome", "Outcome", "failure", "step_of"]


def failure(source: str, code: object, message: str) -> dict[str, str]:
    """One thing a run did not do, as a person reads it: its source (a file, an s3:// object, a URL without
    its query string, or what else names it: a row and its target), the error code and the message (URLs
    in it without query strings: no signature, no token)."""
    from core.redact import safe_uri, scrub_urls

    shown = "" if code is None else str(code)
    return {"source": safe_uri(source), "code": shown, "message": scrub_urls(message)}


def step_of(reason: str) -> str:
    """The step a copy's failure names first ("copy: ..." -> copy; archive, backup), else "failed"."""
    step, sep, _ = reason.partition(":")
    return step if sep and " " not in step else "failed"


@dataclass
class Outcome:
    """How a run of a job ended: its exit status and the lines that say why (each job adds its own fields);
    failed: what it did not do, each a failure() (source, code, message), for the flow's artifact."""

    exit_code: int
    reasons: list[str] = field(default_factory=list)
    report_files: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    #: What stopped the run early, when something did (stop_said: kind, message, code).
    stopped: dict[str, str] = field(default_factory=dict)

    def log_lines(self) -> list[str]:
        """What the run says: the flow logs these, and names a failure by the first."""
        return list(self.reasons)

    def failure(self) -> str:
        """The message of a Failed flow run: the exit status and what went wrong first."""
        lines = [line.strip() for line in self.log_lines() if line.strip()]
        return f"exit status {self.exit_code}: {lines[0] if lines else 'not everything is done'}"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form (the flow's result)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The outcome a flow returned (as_dict's form)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class CopyOutcome(Outcome):
    """How a run of a copying job (archive, backup) ended: exit status, failure lines, counts by state,
    bytes copied, report files; warnings: what was not saved without failing (a poster link that gives
    nothing), said after the failures."""

    counts: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    warnings: list[str] = field(default_factory=list)

    def log_lines(self) -> list[str]:
        """The failures, then the warnings."""
        return [*self.reasons, *self.warnings]

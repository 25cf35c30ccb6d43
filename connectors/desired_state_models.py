"""What a setup desired-state file declares: events, DRM callbacks, privacy domains, secret references."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from connectors.config import ConfigError

__all__ = [
    "DesiredStateError",
    "SecretRef",
    "RestreamSpec",
    "BatchSpec",
    "EventSpec",
    "DrmSpec",
    "DomainSpec",
    "DesiredState",
    "Resolver",
    "parse_secret_ref",
]

_REF_ENV = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_REF_BLOCK = "secret-block:"


class DesiredStateError(ConfigError):
    """The file cannot be used: one line per problem, `<file>:<line>: <field>: <reason>` (never a secret)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class SecretRef:
    """Where a secret comes from: an environment variable or a Prefect Secret block (never the value)."""

    env: str | None = None
    block: str | None = None

    def __str__(self) -> str:
        return f"${{{self.env}}}" if self.env else f"{_REF_BLOCK}{self.block}"


def parse_secret_ref(value: Any) -> SecretRef | None:
    """`${NAME}` or `secret-block:NAME` as a reference; None for anything else (a literal is refused)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _REF_ENV.match(text)
    if match:
        return SecretRef(env=match.group(1))
    if text.startswith(_REF_BLOCK) and len(text) > len(_REF_BLOCK):
        return SecretRef(block=text[len(_REF_BLOCK) :])
    return None


#: Resolves a reference to its value (raises KeyError when it cannot).
Resolver = Callable[[SecretRef], str]


@dataclass(frozen=True)
class RestreamSpec:
    """A restream target of an event; key resolved from its reference (hidden from repr)."""

    name: str
    url: str
    key: str = field(repr=False)
    description: str | None = None
    enabled: bool | None = None
    where: str = ""


@dataclass(frozen=True)
class BatchSpec:
    """A unique codes batch of an event (spec 4.7)."""

    name: str
    codes_amount: int
    max_count: int | None = None
    sessions_per_code: int | None = None
    starts_at: date | None = None
    expires_at: date | None = None
    where: str = ""
    #: "<file>:<line>: <field>: in the past" when a date is before today (refused only at the create).
    past: str | None = None


@dataclass(frozen=True)
class EventSpec:
    """A live event as the file wants it: fields in the client's EventFields names (only those written)."""

    name: str
    type: str
    parent_id: str
    fields: Mapping[str, Any] = field(repr=False)
    restreams: tuple[RestreamSpec, ...] | None = None  #: None: the file does not manage the targets
    batches: tuple[BatchSpec, ...] | None = None
    stream_start: datetime | None = None
    poster_url: str | None = field(default=None, repr=False)
    where: str = ""
    lines: Mapping[str, str] = field(default_factory=dict, repr=False)  #: field -> "<file>:<line>"
    state: str | None = None  #: draft, enabled or completed (None: the file leaves the state alone)
    next_stream: datetime | None = None  #: a recurring event's next stream to schedule (POST .../stream)

    def at(self, name: str) -> str:
        """`<file>:<line>` of a field (the event's own line when the field has none)."""
        return self.lines.get(name, self.where)


@dataclass(frozen=True)
class DrmSpec:
    """The DRM authorisation callback of the workspace (project_id None) or one project."""

    project_id: str | None
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    strict: bool | None = None
    where: str = ""


@dataclass(frozen=True)
class DomainSpec:
    """A privacy domain of the workspace's list: its name (lower case), the name it had before (a rename), and
    whether it is kept archived."""

    domain: str
    renamed_from: str | None = None
    archived: bool = False
    where: str = ""


@dataclass(frozen=True)
class DesiredState:
    """Everything the file declares."""

    path: str
    events: tuple[EventSpec, ...] = ()
    drm: tuple[DrmSpec, ...] = ()
    privacy_domains: tuple[DomainSpec, ...] | None = None  #: None: the file does not manage the list
    secrets: tuple[str, ...] = field(default=(), repr=False)  #: every resolved secret (for blanking)
    drm_managed: bool = False  #: the file has a `drm` key (--prune deletes callbacks it does not declare)

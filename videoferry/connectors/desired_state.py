"""Reading and checking a setup desired-state file (YAML, events also from CSV) before any call."""

from __future__ import annotations

import csv
import io
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from videoferry.connectors.config import ConfigError
from videoferry.connectors.input_files import InputFileError, read_input
from videoferry.connectors.inventory_sources import SourceBase

if TYPE_CHECKING:
    from videoferry.connectors.desired_state_rules import Reader

__all__ = [
    "DesiredStateError",
    "SecretRef",
    "RestreamSpec",
    "BatchSpec",
    "EventSpec",
    "DrmSpec",
    "DomainSpec",
    "DesiredState",
    "load_desired_state",
    "parse_secret_ref",
]

TOP_KEYS = frozenset({"version", "parent_id", "drm", "privacy_domains", "events", "events_csv"})
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


def _node_value(node: yaml.Node, file: str, path: str, lines: dict[str, str]) -> Any:
    """The Python value of a YAML node; lines[path] = `<file>:<line>` for it and everything under it."""
    lines[path] = f"{file}:{node.start_mark.line + 1}"
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(yaml.SafeLoader("").construct_object(key_node))
            out[key] = _node_value(value_node, file, f"{path}.{key}" if path else key, lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_node_value(item, file, f"{path}[{i}]", lines) for i, item in enumerate(node.value)]
    return yaml.SafeLoader("").construct_object(node)


def _csv_events(r: Reader, raw: Any, base: SourceBase, at: str) -> list[tuple[Any, Callable[[str], str]]]:
    """Rows of events_csv: {path, defaults}; each row is merged over the defaults."""
    if isinstance(raw, str):
        raw = {"path": raw}
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        r.fail(at, "events_csv", "a path, or a mapping with path and defaults")
        return []
    if base.s3_bucket:
        path = f"s3://{base.s3_bucket}/{posixpath.join(base.s3_dir, raw['path'])}"
    else:
        path = str(Path(base.local_dir or ".") / raw["path"])
    defaults = raw.get("defaults") or {}
    try:
        data, _, _ = read_input(path, None, what="events_csv")
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"), newline="")))
    except (InputFileError, UnicodeDecodeError) as exc:
        r.fail(at, "events_csv.path", str(exc))
        return []
    out: list[tuple[Any, Callable[[str], str]]] = []
    for n, row in enumerate(rows, start=2):
        cells = {k.strip(): v for k, v in row.items() if k and v is not None and v.strip() != ""}
        merged = {**defaults, **cells}
        out.append((merged, _csv_where(path, n)))
    return out


def _yaml_where(lines: Mapping[str, str], top: str, index: int) -> Callable[[str], str]:
    """`<file>:<line>` of a field of events[index] (its nearest written ancestor when it has none)."""

    def where(name: str) -> str:
        path = f"events[{index}].{name}" if name else f"events[{index}]"
        while path not in lines and "." in path:
            path = path.rsplit(".", 1)[0]
        return lines.get(path, top)

    return where


def _csv_where(file: str, row: int) -> Callable[[str], str]:
    """`<file>:<row>` for every field of a CSV row."""
    return lambda _name: f"{file}:{row}"


def load_desired_state(path: str | Path, resolver: Resolver, *, today: date | None = None) -> DesiredState:
    """Read and check the file; DesiredStateError listing every problem (with file, line and field)."""
    from videoferry.connectors import desired_state_rules as rules

    file = str(path)
    r = rules.Reader(file, resolver, today or datetime.now(UTC).date())
    try:
        content, _, base = read_input(file, None, what="desired-state file")
        root = yaml.compose(content.decode("utf-8"))
    except (InputFileError, UnicodeDecodeError) as exc:
        raise DesiredStateError([f"{file}: {exc}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise DesiredStateError([f"{file}{line}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None
    lines: dict[str, str] = {}
    data = _node_value(root, file, "", lines) if root is not None else {}
    if not isinstance(data, dict):
        raise DesiredStateError([f"{file}:1: the file must be a mapping (events, drm, privacy_domains)"])
    top = f"{file}:1"
    for key in sorted(set(data) - TOP_KEYS):
        r.fail(lines.get(key, top), key, "unknown field")
    default_parent = data.get("parent_id")
    raw_events: list[tuple[Any, Callable[[str], str]]] = []
    for i, raw in enumerate(data.get("events") or []):
        raw_events.append((raw, _yaml_where(lines, top, i)))
    if "events_csv" in data:
        raw_events += _csv_events(r, data["events_csv"], base, lines.get("events_csv", top))
    events: list[EventSpec] = []
    seen: dict[tuple[str, str], str] = {}
    for raw, where in raw_events:
        event = rules.read_event(r, raw, where, default_parent)
        if event is None:
            continue
        key = (event.parent_id, event.name)
        if key in seen:
            r.fail(
                event.where,
                "name",
                f"{event.name!r} already declared at {seen[key]} (names are unique per parent)",
            )
            continue
        seen[key] = event.where
        events.append(event)
    drm = rules.read_drm(r, data["drm"], lines, top) if data.get("drm") is not None else []
    domains = None
    if "privacy_domains" in data:
        domains = rules.read_domains(r, data["privacy_domains"] or [], lines, top)
    if r.problems:
        raise DesiredStateError(r.problems)
    return DesiredState(
        file,
        tuple(events),
        tuple(drm),
        tuple(domains) if domains is not None else None,
        tuple(r.secrets),
        drm_managed="drm" in data,
    )

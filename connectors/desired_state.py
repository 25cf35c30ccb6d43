"""Reading and checking a setup desired-state file (YAML, events also from CSV) before any call."""

from __future__ import annotations

import csv
import io
import posixpath
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml

from connectors import desired_state_rules as rules
from connectors import desired_state_workspace as workspace
from connectors.desired_state_models import (
    BatchSpec,
    DesiredState,
    DesiredStateError,
    DomainSpec,
    DrmSpec,
    EventSpec,
    Resolver,
    RestreamSpec,
    SecretRef,
    parse_secret_ref,
)
from connectors.desired_state_rules import Reader
from connectors.input_files import InputFileError, read_input
from connectors.inventory_sources import SourceBase

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
    "load_desired_state",
    "parse_secret_ref",
]

TOP_KEYS = frozenset({"version", "parent_id", "drm", "privacy_domains", "events", "events_csv"})


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
    file = str(path)
    r = Reader(file, resolver, today or datetime.now(UTC).date())
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
    drm = workspace.read_drm(r, data["drm"], lines, top) if data.get("drm") is not None else []
    domains = None
    if "privacy_domains" in data:
        domains = workspace.read_domains(r, data["privacy_domains"] or [], lines, top)
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

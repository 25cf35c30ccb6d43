"""Check: the differences this ledger's own apply operations explain (an edit, a trim, a move, a delete, a
copy it made), so a library that apply changed on purpose still checks clean.

An item's video differs from its row in a field; the last done apply operation on that video that set the
field (tasks/apply/values.py, recorded with its intent) explains it when the video holds that operation's
value (compared under core/tidy.py's rules, as the row is). New bytes (a trim, a crop, a replace) cannot be
known before the call: the operation explains a difference in size, md5 or duration. A value changed again
after apply (by hand) is not explained. Operations recorded before values were kept explain nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from videoferry.connectors.ids import same_id, try_normal_id
from videoferry.connectors.models import Video
from videoferry.core.tidy import same_chapters, same_description, same_tags, same_title
from videoferry.state.machine import OpStatus, UnitState
from videoferry.state.reader import LedgerReader
from videoferry.tasks.apply.values import recorded
from videoferry.tasks.check.compare import CheckLine, Mark

#: Fields new bytes change (a trim, a crop, a replace): explained without a value.
BYTE_FIELDS = frozenset({"size", "md5", "duration"})
#: Apply kinds whose result is another video than their target (copy, concat; a cut when it names one).
MAKES = frozenset({"copy", "concat", "cut"})


@dataclass(frozen=True)
class Edit:
    """One done apply operation on a video: its id in the operations file, its kind, what it set."""

    op_id: str
    kind: str
    sets: Mapping[str, Any]
    order: int = 0  #: its done call's number in the ledger: edits of one video are in this order

    def says(self) -> str:
        """How a line names it: `apply op <id> (<kind>)`."""
        return f"apply op {self.op_id} ({self.kind})"


@dataclass
class Applied:
    """What this ledger's apply did, by normal video id: the edits on each video (in the order they were
    made), the videos it deleted and the videos it made."""

    edits: dict[str, list[Edit]] = field(default_factory=dict)
    deleted: dict[str, Edit] = field(default_factory=dict)
    made: dict[str, Edit] = field(default_factory=dict)

    def explains(self, video: Video, fields: Sequence[str]) -> dict[str, Edit]:
        """The fields (of those given) that an edit explains, each with its edit."""
        edits = self.edits.get(_normal(video.id), [])
        found: dict[str, Edit] = {}
        for name in fields:
            wanted = "bytes" if name in BYTE_FIELDS else name
            last = next((e for e in reversed(edits) if wanted in e.sets), None)
            if last is not None and _holds(video, wanted, last.sets[wanted]):
                found[name] = last
        return found


def _normal(video_id: str) -> str:
    return try_normal_id(video_id) or video_id


def _holds(video: Video, name: str, value: Any) -> bool:
    """Whether the video holds the value an edit set in this field (bytes: always, they cannot be known)."""
    if name == "bytes":
        return True
    if name == "title":
        return isinstance(value, str) and same_title(value, video.title or "")
    if name == "description":
        return isinstance(value, str) and same_description(value, video.description)
    if name == "tags":
        return isinstance(value, list) and same_tags(value, video.tags or [])
    if name == "privacy_type":
        return value == video.privacy_type
    if name == "privacy_domains":
        return isinstance(value, list) and {str(d).strip().lower() for d in value} == {
            d.strip().lower() for d in video.privacy_domains or []
        }
    if name == "chapters":
        have = [(c.time, c.title) for c in (video.chapters.items if video.chapters else [])]
        return isinstance(value, list) and same_chapters([(int(t), str(n)) for t, n in value], have)
    if name == "parent" and isinstance(value, Mapping):
        folder, project = value.get("folder_id"), value.get("project_id")
        if folder:
            return same_id(folder, video.folder_id)
        return same_id(project, video.project_id) and not video.folder_id
    return False


def applied_edits(ledger: LedgerReader) -> Applied:
    """What the ledger's done apply units did (their done calls' recorded values)."""
    applied = Applied()
    for unit in ledger.units([UnitState.DONE]):
        done = ledger.ops(op_key=unit.unit_key, status=OpStatus.DONE)
        sets = recorded(done[-1].params) if done else None
        edit = Edit(unit.op_id, unit.kind, sets or {}, done[-1].op_id if done else 0)
        target, result = unit.video_id, unit.result_id
        if unit.kind == "delete" and target:
            applied.deleted[_normal(target)] = edit
            continue
        if unit.kind in MAKES and result and not same_id(result, target):
            applied.made[_normal(result)] = edit
        if sets is None:
            continue  # recorded before values were kept: explains nothing
        on = result or target  # a cut that made a new video set its values there
        if on:
            applied.edits.setdefault(_normal(on), []).append(edit)
    for edits in applied.edits.values():
        edits.sort(key=lambda e: e.order)
    return applied


def explained_line(line: CheckLine, video: Video, applied: Applied) -> CheckLine:
    """An item's `*` line with what apply explains taken out: `~` when it explains every field (named on
    the line, not counted), else `*` with the rest and a note naming what it explains."""
    if line.mark is not Mark.DIFFERS:
        return line
    found = applied.explains(video, line.fields)
    if not found:
        return line
    rest = tuple(f for f in line.fields if f not in found)
    groups: dict[int, tuple[Edit, list[str]]] = {}
    for name, edit in found.items():
        groups.setdefault(id(edit), (edit, []))[1].append(name)
    by = "; ".join(f"{', '.join(names)} by {edit.says()}" for edit, names in groups.values())
    if rest:
        note = f"as this ledger's apply left them: {by}"
        return CheckLine(Mark.DIFFERS, line.key, line.row, line.title, line.video_id, rest,
                         _join(line.note, note), line.bytes_by)  # fmt: skip
    note = f"differs from its row as this ledger's apply left it: {by}"
    return CheckLine(Mark.EXPLAINED, line.key, line.row, line.title, line.video_id, (),
                     _join(line.note, note), line.bytes_by)  # fmt: skip


def _join(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second

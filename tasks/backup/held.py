"""What a backup holds of each video, as the ledger records it, and where: the layout and the op keys."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from state.machine import OpStatus
from state.models import Op
from state.reader import LedgerReader

__all__ = [
    "INDEX_STEP",
    "STEPS",
    "Held",
    "destination_id",
    "held_videos",
    "backup_key",
    "video_dir",
]

#: A video's steps (op_key backup:<destination id>:<video_id>:<step>), in the order a run takes them.
STEPS = ("copy", "files", "metadata", "gone", "prune")
#: The backup's own step: inventory.csv, deleted.csv and the manifest (op_key backup:<destination id>:index).
INDEX_STEP = "index"


def destination_id(uri: str) -> str:
    """A short stable name of a destination (its normal uri hashed): one ledger may back up to several."""
    return hashlib.sha256(uri.encode("utf-8")).hexdigest()[:12]


def backup_key(dest_id: str, video_id: str | None, step: str) -> str:
    """backup:<destination id>:<video_id>:<step>, or backup:<destination id>:index."""
    return f"backup:{dest_id}:{step}" if video_id is None else f"backup:{dest_id}:{video_id}:{step}"


def video_dir(video_id: str) -> tuple[str, ...]:
    """A video's folder under the backup's root: videos/<video_id>."""
    return ("videos", video_id)


@dataclass
class Held:
    """What the backup holds of one video: each step's latest done result (None: never done, or pruned)."""

    video_id: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    op_ids: dict[str, int] = field(default_factory=dict)

    def result(self, step: str) -> dict[str, Any] | None:
        """The latest done result of a step."""
        return self.results.get(step)

    @property
    def copied(self) -> dict[str, Any] | None:
        """The verified copy of its file."""
        return self.result("copy")

    @property
    def gone(self) -> dict[str, Any] | None:
        """How it left the service (deleted, moved out of the selection), while it is still gone."""
        mark = self.result("gone")
        return mark if mark is not None and mark.get("gone") else None

    @property
    def kept(self) -> bool:
        """Whether the backup holds anything of it."""
        return any(step in self.results for step in ("copy", "files", "metadata"))


def _record(held: dict[str, Held], op: Op, prefix: str) -> None:
    rest = (op.op_key or "")[len(prefix) :]
    video_id, _, step = rest.rpartition(":")
    if not video_id or step not in STEPS or not isinstance(op.result, dict):
        return
    entry = held.setdefault(video_id, Held(video_id))
    entry.results[step] = op.result
    entry.op_ids[step] = op.op_id
    if step == "prune":  # what came before a prune is gone from the backup
        for earlier in [s for s, i in entry.op_ids.items() if i < op.op_id]:
            entry.results.pop(earlier, None)
            entry.op_ids.pop(earlier, None)


def held_videos(reader: LedgerReader, dest_id: str) -> dict[str, Held]:
    """Every video the ledger says this destination holds or held, by id (one read of the done ops)."""
    prefix = f"backup:{dest_id}:"
    ops = [
        op
        for kind in ("backup", "backup_prune")
        for op in reader.ops(kind=kind, status=OpStatus.DONE)
        if (op.op_key or "").startswith(prefix)
    ]
    held: dict[str, Held] = {}
    for op in sorted(ops, key=lambda o: o.op_id):
        _record(held, op, prefix)
    for entry in held.values():
        entry.results.pop("prune", None)
    return {k: v for k, v in held.items() if v.results}

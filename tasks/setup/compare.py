"""What setup would change: the service now against the desired-state file, object by object (GET only)."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING, Any

from connectors.client.live_models import LiveEvent
from connectors.desired_state import BatchSpec, DesiredState, EventSpec, SecretRef
from connectors.ids import same_id
from state.machine import OpStatus
from tasks.lookup import find_named
from tasks.setup.changes import (
    BLOCKED,
    CONFLICT,
    CREATE,
    DELETE,
    UNCHANGED,
    UPDATE,
    Change,
    ChangeSet,
    as_rows,
    change_summary,
    changes_text,
    name_key,
    show,
    shown,
)
from tasks.setup.differences import batch_differences, event_differences, restream_differences
from tasks.setup.lifecycle import current_state, state_step, stream_scheduled
from tasks.setup.workspace import WorkspaceComparer

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from state.ledger import Ledger


def resolve_secret(ref: SecretRef) -> str:
    """The value of a reference: the environment variable, or the Prefect Secret block (KeyError if unset)."""
    if ref.env is not None:
        value = os.environ.get(ref.env)
        if not value:
            raise KeyError(ref.env)
        return value
    try:
        from prefect.blocks.system import Secret

        block: Any = Secret.load(str(ref.block))
        return str(block.get())
    except Exception:  # noqa: BLE001 - any failure to load the block means "not set"
        raise KeyError(str(ref.block)) from None


def poster_digest(url: str) -> str:
    """A poster address as the ledger keeps it (it may be a signed link: only a digest)."""
    return hashlib.sha256(url.encode()).hexdigest()[:16]


def event_key(spec: EventSpec) -> str:
    """The op_key scope of an event: its parent and name (events are matched by name within their parent)."""
    return f"{spec.parent_id}/{spec.name}"


#: Why a next stream is not scheduled yet: only the event's current stream can be seen (spec 2.8), so a stream
#: queued behind a pending one could not be told from none when a create's answer is lost.
NEXT_WAITS = (
    "waits: the event's pending stream comes first (stream_start moves it); scheduled once it has run"
)


class Comparer:
    """Reads what the service has (GET only) and the ledger's own record, and lists the changes."""

    def __init__(self, client: VideoClient, ledger: Ledger | None, *, prune: bool = False) -> None:
        self.client = client
        self.ledger = ledger
        self.prune = prune

    def compare(self, state: DesiredState) -> ChangeSet:
        """The changes of the whole file: domains and DRM (tasks/setup/workspace.py), then each event with its
        targets, batches, stream, lifecycle."""
        changeset = ChangeSet()
        WorkspaceComparer(self.client, self.ledger, prune=self.prune).compare(changeset, state)
        events_by_parent: dict[str, list[LiveEvent]] = {}
        for spec in state.events:
            if spec.parent_id not in events_by_parent:
                listed = self.client.live_events.iter_events(parent_id=spec.parent_id)
                events_by_parent[spec.parent_id] = [e for e in listed if same_id(e.parent_id, spec.parent_id)]
            matches = find_named(events_by_parent[spec.parent_id], spec.name, lambda e: e.name)
            if len(matches) > 1:
                changeset.changes.append(
                    Change(
                        CONFLICT, "event", spec.name, spec.where, reason=f"{len(matches)} events of that name"
                    )
                )
                continue
            self._event(changeset, spec, matches[0] if matches else None)
        if self.prune:
            self._prune_events(changeset, state)
        past = [
            c.spec.past for c in changeset.changes if c.kind == "codes" and c.action == CREATE and c.spec.past
        ]
        changeset.problems += past
        return changeset

    # -- events ---------------------------------------------------------------------------------------

    def _event(self, changeset: ChangeSet, spec: EventSpec, event: LiveEvent | None) -> None:
        scope = event_key(spec)
        if event is None:
            fields = [(n, "-", show(n, v)) for n, v in [("type", spec.type), *spec.fields.items()]]
            if spec.restreams:
                fields.append(("restreams", "-", show("x", [r.name for r in spec.restreams])))
            changeset.changes.append(
                Change(
                    CREATE, "event", spec.name, spec.where, fields, op_key=f"setup:event:{scope}", event=spec
                )
            )
            for batch in spec.batches or ():
                changeset.changes.append(self._batch_create(spec, batch, None))
            if spec.batches and spec.fields.get("privacy_share"):
                changeset.changes.append(_share_after_first_batch(spec, None))
            if spec.poster_url:
                changeset.changes.append(Change(UPDATE, "poster", spec.name, spec.at("poster"), event=spec))
            self._lifecycle(changeset, spec, None)
            return
        changeset.found[(spec.parent_id, spec.name)] = event
        pending = event.stream is None or event.stream.is_pending
        diffs = event_differences(spec, event)
        change = Change(
            UNCHANGED, "event", spec.name, spec.where, shown(diffs), event=spec, event_id=event.id
        )
        if diffs:
            change.op_key = f"setup:event:{scope}:update"
            change.send = {n: wanted for n, _, wanted in diffs}
            change.action = UPDATE if pending else BLOCKED
            if any(n == "privacy_share" for n, _, _ in diffs) and _share_reset(event):
                change.reason = RESET_REASON
            if not pending:
                status = event.stream.status if event.stream else "-"
                change.reason = f"not updated: the event's stream is {status}, not pending (spec 3.2)"
        changeset.changes.append(change)
        if spec.restreams is not None:
            self._restreams(changeset, spec, event)
        if spec.batches is not None:
            self._batches(changeset, spec, event, pending)
        if spec.stream_start is not None:
            self._stream(changeset, spec, event)
        if spec.poster_url and not self._poster_done(event.id, spec.poster_url):
            changeset.changes.append(
                Change(UPDATE, "poster", spec.name, spec.at("poster"), event=spec, event_id=event.id)
            )
        self._lifecycle(changeset, spec, event)

    def _restreams(self, changeset: ChangeSet, spec: EventSpec, event: LiveEvent) -> None:
        have = {name_key(t.name): t for t in event.restreams or [] if t.name}
        wanted = {name_key(r.name) for r in spec.restreams or ()}
        for target in spec.restreams or ():
            label = f"{spec.name} / {target.name}"
            key = f"setup:restream:{event.id}/{target.name}"
            found = have.get(name_key(target.name))
            if found is None:
                changeset.changes.append(
                    Change(
                        CREATE, "restream", label, target.where, op_key=key, event_id=event.id, spec=target
                    )
                )
                continue
            diffs = restream_differences(target, found)
            change = Change(UPDATE if diffs else UNCHANGED, "restream", label, target.where, shown(diffs))
            change.op_key, change.event_id, change.object_id = f"{key}:update", event.id, found.id
            change.send = {n: wanted_value for n, _, wanted_value in diffs}
            changeset.changes.append(change)
        for key_of, found in sorted(have.items()):
            if key_of not in wanted:
                name = found.name
                change = Change(DELETE if self.prune else UNCHANGED, "restream", f"{spec.name} / {name}")
                change.reason = "" if self.prune else "not in the file (kept: --prune deletes it)"
                change.op_key, change.event_id, change.object_id = (
                    f"setup:restream:{event.id}/{name}:delete",
                    event.id,
                    found.id,
                )
                changeset.changes.append(change)

    def _batch_create(self, spec: EventSpec, batch: BatchSpec, event_id: str | None) -> Change:
        fields = [
            (n, "-", show(n, getattr(batch, n)))
            for n in ("codes_amount", "max_count", "sessions_per_code", "starts_at", "expires_at")
            if getattr(batch, n) is not None
        ]
        label = f"{spec.name} / {batch.name}"
        return Change(CREATE, "codes", label, batch.where, fields, event=spec, event_id=event_id, spec=batch)

    def _batches(self, changeset: ChangeSet, spec: EventSpec, event: LiveEvent, pending: bool) -> None:
        have = {name_key(b.name): b for b in self.client.unique_codes.iter_batches(event.id) if b.name}
        wanted = {name_key(b.name) for b in spec.batches or ()}
        for batch in spec.batches or ():
            found = have.get(name_key(batch.name))
            if found is not None:
                changeset.batches[(event.id, batch.name)] = found.id
            if found is None:
                changeset.changes.append(self._batch_create(spec, batch, event.id))
                continue
            diffs = batch_differences(batch, found)
            change = Change(
                CONFLICT if diffs else UNCHANGED, "codes", f"{spec.name} / {batch.name}", batch.where
            )
            change.fields, change.event_id, change.object_id = shown(diffs), event.id, found.id
            if diffs:
                change.reason = (
                    "a batch cannot be changed: give the new one another name (--prune deletes the old)"
                )
            changeset.changes.append(change)
        for key_of, found in sorted(have.items()):
            if key_of not in wanted:
                name = found.name
                change = Change(DELETE if self.prune else UNCHANGED, "codes", f"{spec.name} / {name}")
                change.reason = (
                    "viewers with its codes lose access" if self.prune else "not in the file (kept)"
                )
                change.event_id, change.object_id = event.id, found.id
                change.op_key = f"setup:codes:{event.id}/{name}:delete"
                changeset.changes.append(change)
        first = not have and any(c.kind == "codes" and c.event_id == event.id for c in changeset.changes)
        if first and spec.fields.get("privacy_share"):
            share = _share_after_first_batch(spec, event.id)
            if not pending:
                share.action = UNCHANGED
                share.reason = "the first batch may reset privacy_share; the stream is not pending (spec 3.2)"
            changeset.changes.append(share)

    def _stream(self, changeset: ChangeSet, spec: EventSpec, event: LiveEvent) -> None:
        stream = event.stream
        now = stream.started_at if stream else None
        wanted = spec.stream_start
        change = Change(
            UNCHANGED, "stream", spec.name, spec.at("stream_start"), event=spec, event_id=event.id
        )
        pending = stream is not None and stream.is_pending
        if now != wanted and spec.next_stream is not None and (now == spec.next_stream or not pending):
            change.reason = "stream_start's stream has run: next_stream's is the event's next (kept)"
        elif now != wanted:
            change.fields = shown([("started_at", now, wanted)])
            change.op_key = f"setup:stream:{event.id}"
            if pending:
                change.action = UPDATE
            else:
                change.action = BLOCKED
                change.reason = "not rescheduled: no pending stream (spec 3.2)"
        changeset.changes.append(change)

    def _lifecycle(self, changeset: ChangeSet, spec: EventSpec, event: LiveEvent | None) -> None:
        """A recurring event's next stream (POST .../stream, a create), then its state: last, so an event is
        enabled or completed once everything else of it is written."""
        event_id = event.id if event is not None else None
        when = spec.next_stream
        if when is not None:
            change = Change(
                UNCHANGED, "stream", spec.name, spec.at("next_stream"), event=spec, event_id=event_id
            )
            stream = event.stream if event is not None else None
            scheduled = event is not None and stream_scheduled(self.ledger, event, when)
            if not scheduled and (stream is None or stream.is_pending):
                change.reason = NEXT_WAITS
            elif not scheduled:
                change.action, change.fields = CREATE, shown([("next_stream", None, when)])
            changeset.changes.append(change)
        if spec.state is None:
            return
        now = "draft" if event is None else current_state(event, self.ledger)
        action, reason = state_step(now, spec.state)
        change = Change(action, "state", spec.name, spec.at("state"), event=spec, event_id=event_id)
        change.reason = reason
        if action != UNCHANGED:
            change.fields = [("state", now or "-", spec.state)]
        changeset.changes.append(change)

    def _poster_done(self, event_id: str, url: str) -> bool:
        if self.ledger is None:
            return False
        done = self.ledger.ops(kind="set_poster", target_id=event_id, status=OpStatus.DONE)
        return bool(done) and done[-1].params.get("poster") == poster_digest(url)

    def _prune_events(self, changeset: ChangeSet, state: DesiredState) -> None:
        """Events this ledger created that the file no longer declares (never one made by hand)."""
        if self.ledger is None:
            return
        declared = {event_key(e) for e in state.events}
        deleted = {op.target_id for op in self.ledger.ops(kind="delete_event", status=OpStatus.DONE)}
        for op in self.ledger.ops(kind="create_event", status=OpStatus.DONE):
            scope = f"{op.params.get('parent_id')}/{op.params.get('name')}"
            if scope in declared or not op.created_id or op.created_id in deleted:
                continue
            from connectors.errors import NotFoundError

            try:
                event = self.client.live_events.get(op.created_id)
            except NotFoundError:
                continue
            change = Change(DELETE, "event", str(op.params.get("name")), op_key=f"setup:event:{scope}:delete")
            change.event_id, change.object_id = event.id, event.id
            changeset.changes.append(change)


#: Why privacy_share differs when the service reset it with the event's unique codes (not a change by hand).
RESET_REASON = (
    "privacy_share was reset by the service with the event's unique codes (spec 3.2): written again"
)


def _share_reset(event: LiveEvent) -> bool:
    """Whether an event's empty privacy_share is what unique codes leave (spec 3.2), not an edit."""
    share = event.privacy_share
    return bool(event.unique_codes_enabled) and not (share and (share.password or share.link_hash))


def _share_after_first_batch(spec: EventSpec, event_id: str | None) -> Change:
    """privacy_share written again once the event's first codes batch is made: spec 3.2 resets it on a create
    or update sending unique_codes_enabled true and is silent on the first batch (variant codes-reset-share);
    written after it, the wanted privacy holds under either reading."""
    change = Change(UPDATE, "share", spec.name, spec.at("privacy_share"), event=spec, event_id=event_id)
    change.reason = "written after the first codes batch (the service may reset privacy_share then)"
    change.send = {"privacy_share": spec.fields["privacy_share"]}
    return change


__all__ = [
    "BLOCKED",
    "CONFLICT",
    "CREATE",
    "DELETE",
    "UNCHANGED",
    "UPDATE",
    "Change",
    "ChangeSet",
    "Comparer",
    "as_rows",
    "changes_text",
    "event_key",
    "change_summary",
    "poster_digest",
    "resolve_secret",
]

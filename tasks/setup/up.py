"""`setup up`: the changes written in order, each exactly once (tasks/exactly_once.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from connectors.client.live_models import LiveEvent, RestreamTarget
from connectors.desired_state import BatchSpec, EventSpec, RestreamSpec
from connectors.errors import VideoApiError, WorkspaceRefusedError
from connectors.ids import same_id
from connectors.retry import describe_failure
from core.redact import blank
from tasks.exactly_once import Intent, Lookup, NotMade, OpJournal, Waits, exactly_once, settle
from tasks.lookup import LOOKUP_WAIT_SECONDS, Postponed, find_named
from tasks.setup.compare import (
    BLOCKED,
    CONFLICT,
    CREATE,
    DELETE,
    UPDATE,
    Change,
    ChangeSet,
    event_key,
    poster_digest,
)
from tasks.setup.lifecycle import STATE_WRITES, find_scheduled
from tasks.setup.up_workspace import WorkspaceWrites, one

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from state.ledger import Ledger

log = logging.getLogger(__name__)
T = TypeVar("T")

#: How often a lost create is looked for again until the settle time of tasks/lookup is over.
SETTLE_POLL = 1.0


@dataclass
class UpResult:
    """What a run did: per change label the outcome, the events (for the outputs), failures."""

    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    events: dict[tuple[str, str], LiveEvent] = field(default_factory=dict, repr=False)
    batches: dict[tuple[str, str], str] = field(default_factory=dict)  #: (event id, name) -> batch id
    writes: int = 0
    #: The workspace's refusal that stopped the run (quota, balance...): the changes after it were not sent.
    stopped: WorkspaceRefusedError | None = None
    not_attempted: int = 0


class SetupWriter(WorkspaceWrites):
    """Runs the changes of a ChangeSet in order, each write recorded in the ledger's ops table."""

    def __init__(self, client: VideoClient, ledger: Ledger, run_id: str, secrets: tuple[str, ...]) -> None:
        self.client = client
        self.ledger = ledger
        self.run_id = run_id
        self.secrets = secrets

    # -- the op rule: every write through tasks/exactly_once.py -------------------------------------------

    def _journal(
        self, kind: str, op_key: str, params: Mapping[str, Any], target: tuple[str, str] | None = None
    ) -> OpJournal[Any]:
        """A write's intent and outcome in the ledger's ops table (an event's create names what it made)."""

        def outcome(obj: Any) -> tuple[Any, tuple[str, str] | None]:
            object_id = getattr(obj, "id", None)
            made = ("live_event", str(object_id)) if kind == "create_event" and object_id else None
            return {"id": object_id}, made

        def describe(exc: BaseException) -> str:
            return blank(f"{type(exc).__name__} {getattr(exc, 'code', None)}", self.secrets)

        return OpJournal(
            self.ledger, self.run_id, op_key, kind, params, target=target, outcome=outcome, describe=describe
        )

    def write(
        self,
        kind: str,
        op_key: str,
        params: dict[str, Any],
        call: Callable[[], T],
        *,
        target: tuple[str, str] | None = None,
        find: Callable[[], T | None] | None = None,
    ) -> T:
        """One write, exactly once: an intent left open settled first, intent, call, outcome; a create whose
        answer was lost is looked up by name (found: done; not there after the settle time: void, and the
        lost answer is raised; the next run creates it again)."""
        lookup = None if find is None else _lookup(find, poll_every=SETTLE_POLL)
        try:
            return exactly_once(
                self._journal(kind, op_key, params, target),
                call,
                lookup=lookup,
                waits=Waits(earlier=True, lost=True),
            )
        except NotMade as exc:
            raise exc.unknown from None

    def reconcile_pending(self) -> int:
        """Every setup op an earlier run left without an outcome, settled before anything is sent.

        A create is looked up by name within its parent (found: done with the object; not there once the
        listing had time to show it: void, safe to create); an idempotent write becomes void (it is simply
        sent again if the changes still want it). Returns how many were left open (too young to judge).
        """
        still_open = 0
        for op in self.ledger.pending_ops():
            if not (op.op_key or "").startswith("setup:"):
                continue
            find = self._finder(op.kind, op.params, op.target_id)
            lookup = None if find is None else _lookup(find)
            journal = self._journal(op.kind, op.op_key or "", op.params)
            try:
                settle(journal, Intent(op.op_id, op.intent_at), lookup)
            except Postponed:
                still_open += 1
        return still_open

    def _finder(self, kind: str, params: Mapping[str, Any], event_id: str | None) -> Callable[[], Any] | None:
        """How a create of this kind is looked up by name (tasks/lookup.find_named: names as a service may
        keep them), for an intent an earlier run left open."""
        name = str(params.get("name") or params.get("domain") or "")
        if kind == "create_event":
            return lambda: self._find_event(str(params.get("parent_id") or ""), name)
        if kind == "create_restream" and event_id:
            return lambda: self._find_restream(event_id, name)
        if kind == "create_codes" and event_id:
            return lambda: self._find_batch(event_id, name)
        if kind == "create_domain":
            return lambda: self._find_domain(name)
        if kind == "create_stream" and event_id:
            when = datetime.fromisoformat(str(params.get("started_at")))
            return lambda: find_scheduled(self.client, event_id, when)
        return None

    def _find_event(self, parent: str, name: str) -> LiveEvent | None:
        listed = self.client.live_events.iter_events(parent_id=parent)
        mine = [e for e in listed if same_id(e.parent_id, parent)]
        return one(find_named(mine, name, lambda e: e.name))

    def _find_restream(self, event_id: str, name: str) -> Any:
        return one(find_named(self.client.restreams.list_restreams(event_id), name, lambda t: t.name))

    def _find_batch(self, event_id: str, name: str) -> Any:
        return one(find_named(self.client.unique_codes.iter_batches(event_id), name, lambda b: b.name))

    # -- the changes ----------------------------------------------------------------------------------

    def write_changes(self, changeset: ChangeSet) -> UpResult:
        """Every change that writes; blocked and conflicting ones are reported, not sent."""
        result = UpResult(events=dict(changeset.found), batches=dict(changeset.batches))
        created: dict[tuple[str, str], LiveEvent] = {}
        for index, change in enumerate(changeset.changes):
            if change.action in (BLOCKED, CONFLICT):
                result.skipped.append(f"{change.kind} {change.label}: {change.reason or change.action}")
                continue
            if change.action not in (CREATE, UPDATE, DELETE):
                continue
            if change.event_id is None and change.event is not None and change.kind != "event":
                made = created.get((change.event.parent_id, change.event.name))
                if made is None:
                    result.skipped.append(f"{change.kind} {change.label}: its event was not created")
                    continue
                change.event_id = made.id
            try:
                event = self._one(change)
            except Postponed:  # a lost answer whose lookup could not tell within its bound: never sent again
                result.failed.append(
                    f"{change.action} {change.kind} {change.label}: its outcome could not be told within"
                    f" {LOOKUP_WAIT_SECONDS:g} s (the listing kept failing, or several objects of that name);"
                    " the intent stays open and the next run settles it before anything is sent"
                )
                continue
            except WorkspaceRefusedError as exc:  # every further create would be refused alike: stop here
                result.stopped = exc
                result.not_attempted = sum(
                    c.action in (CREATE, UPDATE, DELETE) for c in changeset.changes[index:]
                )
                log.warning(
                    "setup: %s %s refused by the workspace (%s)", change.action, change.kind, exc.code
                )
                break
            except VideoApiError as exc:
                result.failed.append(f"{change.action} {change.kind} {change.label}: {describe_failure(exc)}")
                log.warning("setup: %s %s failed (%s)", change.action, change.kind, describe_failure(exc))
                continue
            result.writes += 1
            result.done.append(f"{change.action} {change.kind} {change.label}")
            if change.kind == "codes" and change.action == CREATE and isinstance(change.spec, BatchSpec):
                result.batches[(str(change.event_id), change.spec.name)] = str(event.id)
            if isinstance(event, LiveEvent) and change.event is not None:
                key = (change.event.parent_id, change.event.name)
                result.events[key] = event
                if change.action == CREATE:
                    created[key] = event
                    result.writes += self._after_create(change.event, event, result)
        return result

    def _one(self, change: Change) -> Any:
        handler = getattr(self, f"_{change.action}_{change.kind}")
        return handler(change)

    def _create_event(self, change: Change) -> LiveEvent:
        spec = change.event
        assert spec is not None
        fields: dict[str, Any] = dict(spec.fields)
        if spec.restreams:
            fields["restreams"] = [_target(r) for r in spec.restreams]
        events = self.client.live_events
        params = {"name": spec.name, "parent_id": spec.parent_id, "type": spec.type, "fields": sorted(fields)}
        return self.write(
            "create_event",
            change.op_key,
            params,
            lambda: events.create(spec.name, spec.type, parent_id=spec.parent_id, **fields),
            find=lambda: self._find_event(spec.parent_id, spec.name),
        )

    def _update_event(self, change: Change) -> LiveEvent:
        event_id = str(change.event_id)
        send = dict(change.send)
        type_ = send.pop("type", None)
        params = {"fields": sorted(change.send)}
        return self.write(
            "update_event",
            change.op_key,
            params,
            lambda: self.client.live_events.update(event_id, type=type_, **send),
            target=("live_event", event_id),
        )

    def _delete_event(self, change: Change) -> None:
        event_id = str(change.object_id)
        self.write(
            "delete_event",
            change.op_key,
            {"name": change.label},
            lambda: self.client.live_events.delete(event_id),
            target=("live_event", event_id),
        )

    def _create_restream(self, change: Change) -> Any:
        event_id, spec = str(change.event_id), change.spec
        assert isinstance(spec, RestreamSpec)
        restreams = self.client.restreams
        return self.write(
            "create_restream",
            change.op_key,
            {"name": spec.name},
            lambda: restreams.create(event_id, _target(spec)),
            target=("live_event", event_id),
            find=lambda: self._find_restream(event_id, spec.name),
        )

    def _update_restream(self, change: Change) -> Any:
        event_id, restream_id = str(change.event_id), str(change.object_id)
        return self.write(
            "update_restream",
            change.op_key,
            {"name": change.label, "fields": sorted(change.send)},
            lambda: self.client.restreams.update(event_id, restream_id, **change.send),
            target=("live_event", event_id),
        )

    def _delete_restream(self, change: Change) -> None:
        event_id, restream_id = str(change.event_id), str(change.object_id)
        self.write(
            "delete_restream",
            change.op_key,
            {"name": change.label},
            lambda: self.client.restreams.delete(event_id, restream_id),
            target=("live_event", event_id),
        )

    def _create_codes(self, change: Change) -> Any:
        event_id, batch = str(change.event_id), change.spec
        assert isinstance(batch, BatchSpec)
        codes = self.client.unique_codes
        params = {"name": batch.name, "codes_amount": batch.codes_amount}
        return self.write(
            "create_codes",
            f"setup:codes:{event_id}/{batch.name}",
            params,
            lambda: codes.create(
                event_id,
                batch.name,
                batch.codes_amount,
                max_count=batch.max_count,
                sessions_per_code=batch.sessions_per_code,
                starts_at=batch.starts_at,
                expires_at=batch.expires_at,
            ),
            target=("live_event", event_id),
            find=lambda: self._find_batch(event_id, batch.name),
        )

    def _delete_codes(self, change: Change) -> None:
        event_id, batch_id = str(change.event_id), str(change.object_id)
        self.write(
            "delete_codes",
            change.op_key,
            {"name": change.label},
            lambda: self.client.unique_codes.delete(event_id, batch_id),
            target=("live_event", event_id),
        )

    def _update_stream(self, change: Change) -> Any:
        event_id, spec = str(change.event_id), change.event
        assert spec is not None and spec.stream_start is not None
        start = spec.stream_start
        return self.write(
            "schedule_stream",
            f"setup:stream:{event_id}",
            {"started_at": start.isoformat()},
            lambda: self.client.live_events.reschedule_stream(event_id, start),
            target=("live_event", event_id),
        )

    def _create_stream(self, change: Change) -> Any:
        """A recurring event's next stream (POST .../stream: a create, looked up through the event when its
        answer is lost)."""
        event_id, spec = str(change.event_id), change.event
        assert spec is not None and spec.next_stream is not None
        when = spec.next_stream
        return self.write(
            "create_stream",
            f"setup:next_stream:{event_id}/{when.isoformat()}",
            {"started_at": when.isoformat()},
            lambda: self.client.live_events.schedule_stream(event_id, when),
            target=("live_event", event_id),
            find=lambda: find_scheduled(self.client, event_id, when),
        )

    def _update_state(self, change: Change) -> LiveEvent:
        """PUT .../enable or .../complete (idempotent)."""
        event_id, spec = str(change.event_id), change.event
        assert spec is not None and spec.state in STATE_WRITES
        kind, method = STATE_WRITES[spec.state]
        call = getattr(self.client.live_events, method)
        return self.write(
            kind,
            f"setup:state:{event_id}",
            {"state": spec.state},
            lambda: call(event_id),
            target=("live_event", event_id),
        )

    def _update_share(self, change: Change) -> LiveEvent:
        """privacy_share written again after the event's first codes batch (PUT, idempotent)."""
        event_id, share = str(change.event_id), change.send["privacy_share"]
        return self.write(
            "set_share",
            f"setup:share:{event_id}",
            {"fields": ["privacy_share"]},
            lambda: self.client.live_events.update(event_id, privacy_share=share),
            target=("live_event", event_id),
        )

    def _update_poster(self, change: Change) -> Any:
        event_id, spec = str(change.event_id), change.event
        assert spec is not None and spec.poster_url is not None
        url = spec.poster_url
        return self.write(
            "set_poster",
            f"setup:poster:{event_id}",
            {"poster": poster_digest(url)},
            lambda: self.client.posters.upload(event_id, url),
            target=("live_event", event_id),
        )

    def _after_create(self, spec: EventSpec, event: LiveEvent, result: UpResult) -> int:
        """A new event's upcoming stream moved to stream_start when its create did not put it there."""
        start = spec.stream_start
        if start is None or (event.stream is not None and event.stream.started_at == start):
            return 0
        change = Change(UPDATE, "stream", spec.name, event=spec, event_id=event.id)
        try:
            self._update_stream(change)
        except VideoApiError as exc:
            result.failed.append(f"update stream {spec.name}: error {exc.code}")
            return 0
        result.done.append(f"update stream {spec.name}")
        return 1


def _lookup(find: Callable[[], T | None], poll_every: float | None = None) -> Lookup[T]:
    """A lost create's lookup: the object of that name in its parent, listed (tasks/lookup's settle time)."""
    return Lookup(lambda _intent: find(), poll_every=poll_every)


def _target(spec: RestreamSpec) -> RestreamTarget:
    return RestreamTarget(spec.name, spec.url, spec.key, spec.description, spec.enabled)


__all__ = ["SetupWriter", "UpResult", "event_key"]

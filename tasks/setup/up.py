"""Making the setup plan so: every write an operation (intent, then outcome); creates never repeated."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from connectors.client.live_models import LiveEvent, RestreamTarget
from connectors.desired_state import BatchSpec, EventSpec, RestreamSpec
from connectors.errors import UnknownOutcomeError, VideoApiError
from connectors.ids import same_id
from core.redact import blank
from tasks.lookup import settle_remaining
from tasks.setup.plan import BLOCKED, CONFLICT, CREATE, DELETE, UPDATE, Change, Plan, event_key, poster_digest

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from state.ledger import Ledger

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Longest wait for a lost create's object to show in a listing (the settle time of tasks/lookup, bounded).
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


class SetupWriter:
    """Runs the changes of a plan in order, each write recorded in the ledger's ops table."""

    def __init__(self, client: VideoClient, ledger: Ledger, run_id: str, secrets: tuple[str, ...]) -> None:
        self.client = client
        self.ledger = ledger
        self.run_id = run_id
        self.secrets = secrets

    # -- the op rule ----------------------------------------------------------------------------------

    def _resolve_pending(self, op_key: str, find: Callable[[], Any] | None) -> Any:
        """An earlier intent of op_key with no outcome: found -> done (returns the object); else settled."""
        for op in self.ledger.ops(op_key=op_key, status="intent"):
            if find is None:  # an idempotent write: sending it again is harmless
                self.ledger.record_op_outcome(
                    op.op_id, "failed", error_message="outcome unknown; sent again", run_id=self.run_id
                )
                continue
            found = self._look(op.intent_at, find)
            if found is not None:
                self._done(op.op_id, found, op.kind)
                return found
            self.ledger.record_op_outcome(
                op.op_id,
                "void",
                error_message="not found by listing after the settle time",
                run_id=self.run_id,
            )
        return None

    def _look(self, intent_at: datetime, find: Callable[[], Any]) -> Any:
        """The object a create made, listing until found or until "not there" can be believed (bounded)."""
        while True:
            found = find()
            if found is not None:
                return found
            remaining = settle_remaining_at(intent_at)
            if remaining <= 0:
                return None
            time.sleep(min(SETTLE_POLL, remaining))

    def _done(self, op_id: int, obj: Any, kind: str) -> None:
        object_id = getattr(obj, "id", None)
        created = {"created_id": object_id, "created_kind": "live_event"} if kind == "create_event" else {}
        self.ledger.record_op_outcome(op_id, "done", {"id": object_id}, run_id=self.run_id, **created)

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
        """One write: pending intents resolved first, intent, call, outcome. A lost create is looked up."""
        earlier = self._resolve_pending(op_key, find)
        if earlier is not None:
            return earlier  # type: ignore[no-any-return]
        op_id = self.ledger.record_op_intent(
            None,
            kind,
            params,
            run_id=self.run_id,
            op_key=op_key,
            target_kind=target[0] if target else None,
            target_id=target[1] if target else None,
        )
        try:
            result = call()
        except UnknownOutcomeError:
            if find is None:
                self.ledger.record_op_outcome(
                    op_id, "failed", error_message="outcome unknown", run_id=self.run_id
                )
                raise
            found = self._look(datetime.now(UTC), find)
            if found is None:
                raise  # the intent stays: a later run looks again before creating
            self._done(op_id, found, kind)
            return found  # type: ignore[no-any-return]
        except VideoApiError as exc:
            message = blank(f"{type(exc).__name__} {exc.code}", self.secrets)
            self.ledger.record_op_outcome(
                op_id,
                "failed",
                error_code=exc.code,
                error_message=message,
                request_id=exc.request_id,
                run_id=self.run_id,
            )
            raise
        self._done(op_id, result, kind)
        return result

    def reconcile_pending(self) -> int:
        """Every setup op an earlier run left without an outcome, settled before anything is sent.

        A create is looked up by name within its parent (found: done with the object; not there once the
        listing had time to show it: void, safe to create); an idempotent write is marked failed (it is
        simply sent again if the plan still wants it). Returns how many were left open (too young to judge).
        """
        still_open = 0
        for op in self.ledger.pending_ops():
            if not (op.op_key or "").startswith("setup:"):
                continue
            find = self._finder(op.kind, op.params, op.target_id)
            if find is None:
                self.ledger.record_op_outcome(
                    op.op_id,
                    "failed",
                    error_message="outcome unknown; sent again if still wanted",
                    run_id=self.run_id,
                )
                continue
            found = find()
            if found is not None:
                self._done(op.op_id, found, op.kind)
            elif settle_remaining_at(op.intent_at) <= 0:
                self.ledger.record_op_outcome(
                    op.op_id,
                    "void",
                    error_message="not found by listing after the settle time",
                    run_id=self.run_id,
                )
            else:
                still_open += 1
        return still_open

    def _finder(self, kind: str, params: Mapping[str, Any], event_id: str | None) -> Callable[[], Any] | None:
        name = str(params.get("name") or params.get("domain") or "")
        if kind == "create_event":
            parent = str(params.get("parent_id") or "")
            events = self.client.live_events

            def find_event() -> LiveEvent | None:
                listed = events.iter_events(parent_id=parent)
                return next((e for e in listed if e.name == name and same_id(e.parent_id, parent)), None)

            return find_event
        if kind == "create_restream" and event_id:
            return lambda: next(iter(self.client.restreams.find(event_id, name)), None)
        if kind == "create_codes" and event_id:
            return lambda: self.client.unique_codes.find(event_id, name)
        if kind == "create_domain":
            return lambda: self.client.privacy_domains.find(name)
        return None

    # -- the changes ----------------------------------------------------------------------------------

    def write_plan(self, plan: Plan) -> UpResult:
        """Every change of the plan that writes; blocked and conflicting ones are reported, not sent."""
        result = UpResult(events=dict(plan.found), batches=dict(plan.batches))
        created: dict[tuple[str, str], LiveEvent] = {}
        for change in plan.changes:
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
            except VideoApiError as exc:
                code = exc.code if exc.code is not None else type(exc).__name__
                result.failed.append(f"{change.action} {change.kind} {change.label}: error {code}")
                log.warning(
                    "setup: %s %s failed (code %s, request %s)",
                    change.action,
                    change.kind,
                    code,
                    exc.request_id,
                )
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

    def _create_domain(self, change: Change) -> Any:
        domains = self.client.privacy_domains
        return self.write(
            "create_domain",
            change.op_key,
            {"domain": change.label},
            lambda: domains.create(change.label),
            find=lambda: domains.find(change.label),
        )

    def _update_domain(self, change: Change) -> Any:
        domain_id = str(change.object_id)
        return self.write(
            "update_domain",
            change.op_key,
            {"domain": change.label, "archived": False},
            lambda: self.client.privacy_domains.restore(domain_id),
        )

    def _delete_domain(self, change: Change) -> Any:
        domain_id = str(change.object_id)
        return self.write(
            "delete_domain",
            change.op_key,
            {"domain": change.label},
            lambda: self.client.privacy_domains.delete(domain_id),
        )

    def _set_drm(self, change: Change) -> Any:
        project = change.label.removeprefix("project ") if change.label != "workspace" else None
        params = {"project_id": project, "fields": sorted(change.send)}
        target = ("project", project) if project else None
        return self.write(
            "set_drm",
            change.op_key,
            params,
            lambda: self.client.drm.update(project, **change.send),
            target=target,
        )

    _create_drm = _set_drm
    _update_drm = _set_drm

    def _create_event(self, change: Change) -> LiveEvent:
        spec = change.event
        assert spec is not None
        fields: dict[str, Any] = dict(spec.fields)
        if spec.restreams:
            fields["restreams"] = [_target(r) for r in spec.restreams]
        events = self.client.live_events

        def find() -> LiveEvent | None:
            listed = events.iter_events(parent_id=spec.parent_id)
            return next(
                (e for e in listed if e.name == spec.name and same_id(e.parent_id, spec.parent_id)), None
            )

        params = {"name": spec.name, "parent_id": spec.parent_id, "type": spec.type, "fields": sorted(fields)}
        return self.write(
            "create_event",
            change.op_key,
            params,
            lambda: events.create(spec.name, spec.type, parent_id=spec.parent_id, **fields),
            find=find,
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
            find=lambda: next(iter(restreams.find(event_id, spec.name)), None),
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
            find=lambda: codes.find(event_id, batch.name),
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


def _target(spec: RestreamSpec) -> RestreamTarget:
    return RestreamTarget(spec.name, spec.url, spec.key, spec.description, spec.enabled)


def settle_remaining_at(intent_at: datetime) -> float:
    """Seconds until "not found" can be believed for a create whose intent was written at intent_at."""
    from tasks.lookup import SentCreate

    return settle_remaining(SentCreate(owner="", title="", parent_id=None, intent_at=intent_at))


__all__ = ["SetupWriter", "UpResult", "event_key"]

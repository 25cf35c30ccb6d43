"""The Prefect events a job's flow run emits (started, finished, failed items, a refusal, a lost lease)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefect.events import emit_event

from videoferry.flows.job import Outcome, stop_said

#: A job's flow run began.
STARTED = "videoferry.run.started"
#: It ended: payload exit_code, counts (by state, where the job keeps them), failed (how many items failed).
FINISHED = "videoferry.run.finished"
#: One item was not done: payload source, code, message (at most MAX_ITEM_EVENTS a run; then one summary).
ITEM_FAILED = "videoferry.item.failed"
#: More items failed than MAX_ITEM_EVENTS: payload emitted, not_emitted (the report and artifact list all).
ITEMS_FAILED_MORE = "videoferry.item.failed.more"
#: The workspace refused to make more (quota, balance, subscription, e-mail): payload code, message.
WORKSPACE_REFUSED = "videoferry.workspace.refused"
#: The run lost its remote ledger's lease: payload message (a rerun goes on).
LEASE_LOST = "videoferry.ledger.lease-lost"
#: The most item.failed events one run emits (the rest: one ITEMS_FAILED_MORE event).
MAX_ITEM_EVENTS = 50

#: Which kind of stop (flows/job.stop_said) emits which event.
_STOPS = {"workspace-refused": WORKSPACE_REFUSED, "ledger-lost": LEASE_LOST}


def _job() -> str:
    """The job of the flow run in progress: its flow's name without `videoferry-` (migrate, setup-drift)."""
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    name = context.flow.name if context is not None and context.flow is not None else "job"
    return name.removeprefix("videoferry-")


def _resource(job: str, **labels: str) -> dict[str, str]:
    """The event's resource: the job (an automation matches `videoferry.job.*` or one job), with labels. The
    flow run is a related resource Prefect adds itself."""
    return {
        "prefect.resource.id": f"videoferry.job.{job}",
        "prefect.resource.name": f"videoferry {job}",
        **labels,
    }


def run_started() -> None:
    """Emit STARTED for the flow run in progress."""
    emit_event(STARTED, resource=_resource(_job()))


def run_finished(outcome: Outcome, cause: BaseException | None = None) -> None:
    """Emit what the run's end says: a refusal or a lost lease (cause, or what stopped the run), each failed
    item up to MAX_ITEM_EVENTS (then one ITEMS_FAILED_MORE), and FINISHED with the counts, its resource
    labelled videoferry.outcome done or failed (an automation on failed runs needs no payload filter)."""
    job = _job()
    stop = stop_said(cause) if cause is not None else outcome.stopped
    if stop.get("kind") in _STOPS:
        said: dict[str, Any] = {k: stop[k] for k in ("code", "message") if k in stop}
        emit_event(_STOPS[stop["kind"]], resource=_resource(job), payload=said)
    for failed in outcome.failed[:MAX_ITEM_EVENTS]:
        item = {k: failed.get(k, "") for k in ("source", "code", "message")}
        emit_event(
            ITEM_FAILED, resource=_resource(job, **{"videoferry.error-code": item["code"]}), payload=item
        )
    if len(outcome.failed) > MAX_ITEM_EVENTS:
        more = {"emitted": MAX_ITEM_EVENTS, "not_emitted": len(outcome.failed) - MAX_ITEM_EVENTS}
        emit_event(ITEMS_FAILED_MORE, resource=_resource(job), payload=more)
    payload: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "failed": len(outcome.failed),
        "counts": _counts(outcome.as_dict()),
    }
    if outcome.exit_code:
        payload["message"] = outcome.failure()
    done = "done" if outcome.exit_code == 0 else "failed"
    emit_event(FINISHED, resource=_resource(job, **{"videoferry.outcome": done}), payload=payload)


def _counts(outcome: Mapping[str, Any]) -> dict[str, int]:
    """The run's counts by state: a copying job's `counts`, a migration's summary counts; else none."""
    counts = outcome.get("counts") or (outcome.get("summary") or {}).get("counts") or {}
    return {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}

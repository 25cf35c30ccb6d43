"""What differs between an object the service holds and its spec (events, restreams, codes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from videoferry.connectors.client.live_models import LiveEvent, Restream, UniqueCodesBatch
from videoferry.connectors.desired_state import BatchSpec, EventSpec, RestreamSpec
from videoferry.connectors.ids import same_id
from videoferry.core.tidy import same_text


def _norm_list(values: Sequence[str] | None) -> list[str]:
    return sorted(v.lower() for v in values or [])


def event_differences(spec: EventSpec, event: LiveEvent) -> list[tuple[str, Any, Any]]:
    """(field, now, wanted) of every written field the event does not have (EventFields names)."""
    out: list[tuple[str, Any, Any]] = []
    if spec.type != event.type:
        out.append(("type", event.type, spec.type))
    for name, wanted in spec.fields.items():
        if name == "scheduled_time":
            now: Any = event.scheduled_time
            same = now is not None and wanted is not None and now == wanted
        elif name == "record_parent_id":
            now = event.record.parent_id if event.record else None
            same = same_id(now, wanted)
        elif name == "presets":
            now = event.presets
            same = sorted(now or []) == sorted(wanted or [])
        elif name in ("privacy_domains", "privacy_email_domains"):
            now = getattr(event, name)
            same = _norm_list(now) == _norm_list(wanted)
        elif name == "privacy_share":
            share = event.privacy_share
            now = share.model_dump(exclude_none=True, exclude={"link"}) if share else {}
            # only the written keys count; an empty mapping means "anyone with the link" (nothing set)
            same = all(now.get(k) == v for k, v in wanted.items()) and (bool(wanted) or not now)
        else:
            now = getattr(event, name, None)
            same = _same_value(now, wanted)
        if not same:
            out.append((name, now, wanted))
    return out


def _same_value(now: Any, wanted: Any) -> bool:
    """A written field as the service keeps it: a text up to tidying (core.tidy.same_text), else equal."""
    if isinstance(wanted, str) and (now is None or isinstance(now, str)):
        return same_text(wanted, now)
    return bool(now == wanted)


def restream_differences(spec: RestreamSpec, target: Restream) -> list[tuple[str, Any, Any]]:
    """(field, now, wanted) of a restream target's written fields that differ (the description up to tidying;
    the url and key exactly: an address and a secret are not texts a service tidies)."""
    out: list[tuple[str, Any, Any]] = []
    for name in ("url", "key", "description", "enabled"):
        wanted = getattr(spec, name)
        now = getattr(target, name)
        same = _same_value(now, wanted) if name == "description" else now == wanted
        if wanted is not None and not same:
            out.append((name, now, wanted))
    return out


def batch_differences(spec: BatchSpec, batch: UniqueCodesBatch) -> list[tuple[str, Any, Any]]:
    """(field, now, wanted) of a batch's settings that differ (a batch cannot be changed in place)."""
    out: list[tuple[str, Any, Any]] = []
    pairs = (
        ("codes_amount", batch.codes_count, spec.codes_amount),
        ("max_count", batch.max_count, spec.max_count),
        ("sessions_per_code", batch.sessions_per_code, spec.sessions_per_code),
    )
    out += [(n, now, wanted) for n, now, wanted in pairs if now != wanted]
    for name in ("starts_at", "expires_at"):
        wanted_day = getattr(spec, name)
        moment = getattr(batch, name)
        now_day = moment.astimezone(UTC).date() if moment is not None else None
        if wanted_day is not None and now_day != wanted_day:
            out.append((name, now_day, wanted_day))
    return out

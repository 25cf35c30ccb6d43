"""Planning: read the inventory (validated and routed once, as item specs) and upsert it into the ledger."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from videoferry.connectors.inventory import Inventory, read_inventory
from videoferry.connectors.s3 import S3Config
from videoferry.connectors.source_check import SourceCheck, check_sources
from videoferry.core.item import COMPLETE_STATES, ItemSpec, SourceKind, in_shard
from videoferry.state.ledger import Ledger
from videoferry.state.machine import CREATING, FAILED, PLANNED, PROCESSING, UPLOADED, UPLOADING
from videoferry.state.models import Item, PlanResult
from videoferry.state.reader import LedgerReader
from videoferry.tasks.lookup import shared_titles
from videoferry.tasks.migrate.report import size_text, spec_name


@dataclass
class Plan:
    """The inventory as read (good rows as item specs, bad rows as RowErrors) and what the ledger did."""

    inventory: Inventory
    result: PlanResult | None = None
    already_done: int = 0
    #: (K, N): only the items whose key falls in shard K of N are planned (N coordinators, one inventory).
    shard: tuple[int, int] | None = None

    def specs(self, skip: Collection[str] = ()) -> Iterator[ItemSpec]:
        """The item specs this run plans: every good row, or those of its shard; none for a key in skip."""
        return (s for s in self.inventory.specs(skip) if in_shard(s.key, self.shard))

    def keys(self) -> list[str]:
        """The keys of the rows this run plans (specs() without making any spec)."""
        return [key for key in self.inventory.keys() if in_shard(key, self.shard)]

    def shared_titles(self) -> frozenset[tuple[str, str]]:
        """(parent, title_group_key) pairs several rows of the whole inventory fall in, every shard's rows
        counted (tasks/lookup.shared_titles)."""
        return shared_titles((s.parent_id, s.title) for s in self.inventory.specs())

    @property
    def rejected_rows(self) -> list[dict[str, Any]]:
        """Every bad row as dicts: row, field, value, reason."""
        errors = self.inventory.errors
        return [{"row": e.row, "field": e.field, "value": e.value, "reason": e.reason} for e in errors]


def read_plan(
    inventory_uri: str,
    *,
    parent_id: str | None,
    via: str,
    s3: S3Config | None,
    shard: tuple[int, int] | None = None,
    parent_map: Sequence[str] = (),
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    ignore_case: bool = False,
    folder_map: str | None = None,
    captions: str | None = None,
) -> Plan:
    """Read the inventory and route its rows by `via` (an S3 prefix's objects chosen by include / exclude,
    connectors/path_filter.py); nothing is written anywhere."""
    inventory = read_inventory(
        inventory_uri,
        default_parent_id=parent_id,
        parent_map=parent_map,
        via=via,
        s3=s3,
        include=include,
        exclude=exclude,
        ignore_case=ignore_case,
        folder_map=folder_map,
        captions=captions,
    )
    return Plan(inventory=inventory, shard=shard)


@dataclass(frozen=True)
class Step:
    """What the real run would do with one row (a line of the dry run): verb, the item, why; `problem`: the
    row cannot succeed as it stands (its source is missing or unreadable)."""

    verb: str  # create, resume, settle, wait, update, retry, recreate, skip, missing
    spec: ItemSpec
    detail: str
    problem: bool = False

    def line(self) -> str:
        """`create   /clips/a.mp4 (row 1, key k): "Title", 1.2 MB by tus`."""
        return f"{self.verb:<8} {spec_name(self.spec)}: {self.detail}"


#: The verbs of the dry run, in the order its summary counts them.
VERBS = ("create", "resume", "settle", "wait", "update", "retry", "recreate", "skip", "missing")


def preview(
    plan: Plan,
    ledger: LedgerReader | None,
    *,
    s3: S3Config | None = None,
    retry_errors: bool = False,
    check: bool = True,
) -> list[Step]:
    """Dry run: per row what the real run would do, from the ledger's state of its key, and (check) whether
    the bytes it still has to send can be read (connectors/source_check.py). Nothing is written anywhere."""
    specs = list(plan.specs())
    items = {spec.key: ledger.get(spec.key) for spec in specs} if ledger is not None else {}
    steps = [_step(spec, items.get(spec.key), retry_errors) for spec in specs]
    to_read = [
        s.spec.source
        for s in steps
        if s.verb in ("create", "resume", "retry", "recreate", "settle")
        and s.spec.source_kind is not SourceKind.PLATFORM  # its link is resolved when its create is due
    ]
    checks = check_sources(to_read, s3=s3) if check else {}
    return [_checked(step, checks.get(step.spec.source)) for step in steps]


def _step(spec: ItemSpec, item: Item | None, retry_errors: bool) -> Step:
    if item is None:
        return Step("create", spec, f"{_size(spec.source_size)}{spec.via.value}, titled {spec.title!r}")
    changed = [
        f for f in ItemSpec.METADATA_FIELDS if f != "source_size" and _field(spec, f) != _field(item.spec, f)
    ]
    moved = [f for f in ItemSpec.IDENTITY_FIELDS if _field(spec, f) != _field(item.spec, f)]
    state = item.state
    video = f"video {item.video_id}" if item.video_id else "no video yet"
    if state in COMPLETE_STATES:
        note = (
            f"; its row changed ({', '.join(changed + moved)}): not applied to a finished item"
            if changed or moved
            else ""
        )
        return Step("skip", spec, f"already done ({video}){note}")
    if moved and not (state == PLANNED or (state == FAILED and item.video_id is None)):
        note = f"; its {', '.join(moved)} changed while a video may exist: not applied"
    else:
        note = ""
    if state == PLANNED:
        step = Step("create", spec, f"planned by an earlier run, nothing sent yet; titled {spec.title!r}")
    elif state == CREATING:
        step = Step("settle", spec, "its create's answer was lost: looked up before anything is sent again")
    elif state == UPLOADING:
        size = item.bytes_total or spec.source_size
        step = Step(
            "resume",
            spec,
            f"upload at byte {item.upload_offset} of {size if size is not None else '?'} ({video})",
        )
    elif state in (UPLOADED, PROCESSING):
        step = Step("wait", spec, f"processing in the service ({video})")
    elif state == FAILED:
        step = Step("retry", spec, f"failed last time ({item.error_code}: {item.error_message}); tried again")
    elif retry_errors:
        step = Step("recreate", spec, f"the service failed it ({state}): {video} deleted, created anew")
    else:
        return Step(
            "skip", spec, f"the service failed it ({state}, {video}); --retry-errors migrates it again"
        )
    if changed and step.verb == "wait":
        step = Step("update", spec, f"{', '.join(changed)} changed: set once processing is done ({video})")
    elif changed:
        step = Step(step.verb, spec, f"{step.detail}; new {', '.join(changed)} from the row")
    return Step(step.verb, spec, step.detail + note)


def _checked(step: Step, found: SourceCheck | None) -> Step:
    """The step with what its source's check found: a problem makes it `missing`."""
    if found is None:
        return step
    if found.problem is not None:
        return Step("missing", step.spec, f"{found.problem} (the run would fail this item)", problem=True)
    if found.unverified is not None:
        return Step(step.verb, step.spec, f"{step.detail}; {found.unverified}")
    if found.size is not None and step.spec.source_size is None and step.verb == "create":
        return Step(step.verb, step.spec, f"{_size(found.size)}{step.detail}")
    return step


def _field(spec: ItemSpec, name: str) -> object:
    value = getattr(spec, name)
    return value.value if hasattr(value, "value") else value


def _size(size: int | None) -> str:
    return "" if size is None else f"{size_text(size)}, "


def gone_from_source(plan: Plan, ledger: LedgerReader) -> list[str]:
    """The keys of the ledger's items from the platform this whole-account source lists (`vimeo:`,
    `wistia:`, `mux:`, `cloudflare:`, `apivideo:`, `bunny:<library>`, a YouTube Takeout) that it no
    longer shows: deleted at the source since an earlier run (their videos here are kept). A folder's or
    project's listing says nothing of the others: none."""
    source = plan.inventory.uri.strip()
    if plan.inventory.format != "platform":
        return []
    if source.lower().startswith("youtube-takeout:"):
        prefix = "youtube:"
    elif re.fullmatch(r"bunny:\d+", source):  # a Bunny source is one whole library
        prefix = f"{source}/"
    elif source in ("vimeo:", "wistia:", "mux:", "cloudflare:", "apivideo:"):
        prefix = source
    else:
        return []
    listed = set(plan.inventory.keys())
    return sorted(k for k, *_ in ledger.title_rows() if k.startswith(prefix) and k not in listed)


def store_plan(plan: Plan, ledger: Ledger, run_id: str) -> PlanResult:
    """Upsert the item specs into the ledger (one transaction). The rows of items already done or finished,
    which plan() leaves untouched, are counted as already done without being made into specs (a rerun of a
    finished 100k-item ledger: about 0.5 s less); the inventory holds each key once (its reader refuses a
    key seen again), and this run holds the ledger's run lock, so none of them moves in between."""
    complete = ledger.keys_in(COMPLETE_STATES)
    result = ledger.plan(plan.specs(skip=complete), run_id)
    skipped = sum(1 for key in plan.keys() if key in complete) if complete else 0
    plan.result = replace(result, already_done=result.already_done + skipped)
    plan.already_done = plan.result.already_done
    return plan.result

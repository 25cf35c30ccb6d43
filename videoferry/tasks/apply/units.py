"""The units of a resolved operations file: one per operation and video, with what each waits for."""

from __future__ import annotations

from collections.abc import Callable

from videoferry.core.operation import ConcatParams, OperationSpec, OpKind, TargetKind
from videoferry.state.applied import UNIT_OWNER, UnitPlan
from videoferry.tasks.apply.plan import ApplyPlan, Refusal


def unit_plans(
    plan: ApplyPlan, specs: dict[str, OperationSpec], owned: Callable[[list[str]], dict[str, str]]
) -> tuple[list[UnitPlan], list[Refusal]]:
    """The units of a resolved plan, and rows refused on the way (a selector finding only our own results).

    owned maps video ids to the ledger entries that own them: a selector never picks a video an operation
    of this ledger made (a rerun of `select:... copy` must not copy the copies).
    """
    units_of: dict[str, list[str]] = {}
    plans: list[UnitPlan] = []
    refused: list[Refusal] = []
    for p in plan.planned:
        spec = specs[p.op_id]
        extra = _single_deps(spec)
        keys: list[tuple[str, str | None, list[str]]]
        if spec.target.kind is TargetKind.OP:
            base = spec.target.value
            keys = [(p.op_id + k[len(base) :], None, [k]) for k in units_of.get(base, [])]
        elif spec.target.kind is TargetKind.SELECT:
            made = owned(list(p.video_ids))
            picked = [v for v in p.video_ids if not _made_by_op(made.get(v))]
            if not picked:
                refused.append(
                    Refusal(
                        p.row, "target", p.target, "selects only videos this ledger's operations made", True
                    )
                )
                continue
            keys = [(f"{p.op_id}@{v}", v, []) for v in picked]
        else:
            keys = [(p.op_id, p.video_ids[0] if p.video_ids else None, [])]
        units_of[p.op_id] = [k for k, _, _ in keys]
        for key, video, deps in keys:
            plans.append(
                UnitPlan(
                    unit_key=key,
                    op_id=p.op_id,
                    row=p.row,
                    kind=p.kind.value,
                    target=p.target,
                    video_id=video,
                    depends=tuple(dict.fromkeys([*deps, *extra])),
                    params=p.params,
                )
            )
    return plans, refused


def _made_by_op(owner: str | None) -> bool:
    """Whether an owner (state.applied.owners) is an apply unit rather than a migrated item."""
    return owner is not None and owner.startswith(UNIT_OWNER)


def _single_deps(spec: OperationSpec) -> list[str]:
    """The units a concat's op: prepend/append wait for (those operations act on one video)."""
    if not isinstance(spec.params, ConcatParams):
        return []
    return [t.value for t in (*spec.params.prepend, *spec.params.append) if t.kind is TargetKind.OP]


def refuse_deletes(plan: ApplyPlan) -> list[Refusal]:
    """Without --allow-delete: every delete row refused, saying how many videos it would delete."""
    refused = []
    for p in plan.delete_ops:
        count = len(p.video_ids) or 1
        reason = f"delete refused without --allow-delete (it would delete {count} video{'s' * (count != 1)})"
        refused.append(Refusal(p.row, "op", "delete", reason))
    plan.planned = [p for p in plan.planned if p.kind is not OpKind.DELETE]
    return refused

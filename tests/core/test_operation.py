"""The operation model: derived ids, selectors matching, the reference graph check and the order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.item import Chapter, PrivacyType, RowError, VideoStatus
from core.operation import (
    ALL_COLUMNS,
    KIND_COLUMNS,
    ChaptersParams,
    ConcatParams,
    CopyParams,
    CutParams,
    DeleteParams,
    MoveParams,
    OperationSpec,
    OpKind,
    OpParams,
    ReplaceParams,
    Selector,
    Target,
    TargetKind,
    TrimRange,
    UpdateParams,
    derive_op_id,
)
from core.operation_graph import check_references, order_operations, reference_fields

VIDEO = "0f8fad5b-d9cb-469f-a165-70867728950e"
OTHER = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


def video(vid: str = VIDEO) -> Target:
    return Target(TargetKind.VIDEO, vid)


def op(ref: str) -> Target:
    return Target(TargetKind.OP, ref)


def spec(
    id: str, row: int, target: Target, kind: OpKind = OpKind.COPY, params: OpParams | None = None
) -> OperationSpec:
    params = params if params is not None else CopyParams()
    made = OperationSpec(id=id, row=row, kind=kind, target=target, params=params)
    refs = tuple(dict.fromkeys(t for _, t in reference_fields(made)))
    return OperationSpec(id=id, row=row, kind=kind, target=target, params=params, refs=refs)


def test_kinds_and_columns() -> None:
    assert [k.value for k in OpKind] == [
        "update",
        "chapters",
        "copy",
        "move",
        "cut",
        "concat",
        "replace",
        "attach",
        "delete",
    ]
    assert set(KIND_COLUMNS) == set(OpKind)
    assert ALL_COLUMNS[:3] == ("op", "id", "target")
    assert KIND_COLUMNS[OpKind.DELETE] == ()


def test_derived_id_is_stable_and_depends_on_content() -> None:
    params = CutParams(trim=(TrimRange(0.0, 10.0),))
    first = derive_op_id(OpKind.CUT, video(), params)
    assert first == derive_op_id(OpKind.CUT, video(), CutParams(trim=(TrimRange(0, 10),)))
    assert first != derive_op_id(OpKind.CUT, video(OTHER), params)
    assert first != derive_op_id(OpKind.CUT, video(), CutParams(trim=(TrimRange(0.0, 11.0),)))
    assert derive_op_id(OpKind.DELETE, video(), DeleteParams()) != derive_op_id(
        OpKind.COPY, video(), CopyParams()
    )
    chapters = ChaptersParams((Chapter(0.0, "a"),))
    assert derive_op_id(OpKind.CHAPTERS, video(), chapters) != derive_op_id(
        OpKind.CHAPTERS, video(), ChaptersParams()
    )


def test_derived_id_is_pinned() -> None:
    """The formula is part of the ledger's identity: changing it would re-run every derived operation."""
    trim = CutParams(trim=(TrimRange(0.0, 10.0),))
    assert derive_op_id(OpKind.CUT, video(), trim) == "e34caeb90616dcc19994f04aeadfc290"
    assert derive_op_id(OpKind.MOVE, video(), MoveParams(OTHER)) == "cf595e624854fe89b21d9580a28bd35e"


def test_replace_id_ignores_a_urls_signature_but_not_its_path() -> None:
    a = ReplaceParams("https://cdn.example.com/v/a.mp4?X-Amz-Signature=one")
    b = ReplaceParams("https://cdn.example.com/v/a.mp4?X-Amz-Signature=two#t=1")
    c = ReplaceParams("https://cdn.example.com/v/b.mp4?X-Amz-Signature=one")
    assert derive_op_id(OpKind.REPLACE, video(), a) == derive_op_id(OpKind.REPLACE, video(), b)
    assert derive_op_id(OpKind.REPLACE, video(), a) != derive_op_id(OpKind.REPLACE, video(), c)
    assert "Signature" not in repr(a)


def test_target_text_and_references() -> None:
    assert str(video()) == VIDEO
    assert str(Target(TargetKind.KEY, "k1")) == "key:k1"
    assert str(op("a")) == "op:a"
    assert Target(TargetKind.KEY, "k").is_reference and op("a").is_reference
    assert not video().is_reference
    concat = spec(
        "c",
        1,
        op("a"),
        OpKind.CONCAT,
        ConcatParams(prepend=(Target(TargetKind.KEY, "intro"),), append=(video(OTHER), op("b"))),
    )
    assert reference_fields(concat) == [
        ("target", op("a")),
        ("prepend", Target(TargetKind.KEY, "intro")),
        ("append", op("b")),
    ]
    assert concat.refs == (op("a"), Target(TargetKind.KEY, "intro"), op("b"))


def test_selector_matches_and_canonical_text() -> None:
    selector = Selector(
        project_id=VIDEO,
        title="Intro*",
        tags=("x", "y"),
        statuses=(VideoStatus.DONE,),
        created_after=datetime(2026, 1, 1, tzinfo=UTC),
        created_before=datetime(2026, 2, 1, tzinfo=UTC),
    )
    assert selector.title_is_glob and not Selector(title="Intro").title_is_glob
    good = {
        "title": "Intro 1",
        "tags": ["y", "x", "z"],
        "status": "done",
        "created_at": "2026-01-15T10:00:00Z",
    }
    assert selector.matches(good)
    assert not selector.matches({**good, "title": "Outro"})
    assert not selector.matches({**good, "tags": ["x"]})
    assert not selector.matches({**good, "status": "processing"})
    assert not selector.matches({**good, "created_at": "2026-02-01T00:00:00Z"})  # before is strict
    assert not selector.matches({**good, "created_at": None})
    assert not selector.matches({**good, "created_at": "yesterday"})
    assert selector.matches({**good, "created_at": datetime(2026, 1, 2)})  # naive: UTC
    assert Selector(title="Intro").matches({"title": "Intro"})
    assert not Selector(title="Intro").matches({"title": "Intro 2"})
    assert Selector(title="a[*]").matches({"title": "a*"})  # a literal * in a glob
    assert selector.text() == (
        f"project={VIDEO};title=Intro*;tag=x;tag=y;status=done;"
        "created_after=2026-01-01T00:00:00Z;created_before=2026-02-01T00:00:00Z"
    )
    assert Selector(title="a;b", folder_id=OTHER).text() == f'folder={OTHER};title="a;b"'


def test_params_defaults() -> None:
    assert UpdateParams(privacy_type=PrivacyType.CUSTOM).tags is None
    assert CutParams(trim=(TrimRange(0, 5), TrimRange(10, 2.5))).kept_seconds == 7.5
    assert CutParams().kept_seconds is None


# ---------------------------------------------------------------------------------------------- graph


def test_a_clean_graph_has_no_errors_and_runs_dependencies_first() -> None:
    specs = [
        spec("move", 1, op("concat"), OpKind.MOVE, MoveParams(OTHER)),
        spec("concat", 2, op("cut"), OpKind.CONCAT, ConcatParams(prepend=(op("intro"),))),
        spec("cut", 3, Target(TargetKind.KEY, "k1"), OpKind.CUT, CutParams(trim=(TrimRange(5, 10),))),
        spec("intro", 4, video(OTHER)),
        spec("alone", 5, video()),
    ]
    assert check_references(specs, {"k1"}) == []
    ordered = [s.id for s in order_operations(specs)]
    assert ordered == ["cut", "intro", "concat", "move", "alone"]
    assert [s.id for s in order_operations(list(reversed(specs)))] == [
        "alone",
        "intro",
        "cut",
        "concat",
        "move",
    ]


def test_order_keeps_row_order_among_independent_operations() -> None:
    specs = [spec(f"s{i}", i, video()) for i in range(1, 6)]
    assert order_operations(specs) == specs


def test_dangling_references_are_refused_with_their_rows() -> None:
    specs = [
        spec("a", 1, op("ghost")),
        spec("b", 2, Target(TargetKind.KEY, "not-migrated")),
        spec("c", 3, video(), OpKind.CONCAT, ConcatParams(append=(op("nowhere"),))),
        spec("d", 4, Target(TargetKind.KEY, "k1")),
    ]
    errors = check_references(specs, {"k1"})
    assert [(e.row, e.field, e.value) for e in errors] == [
        (1, "target", "op:ghost"),
        (2, "target", "key:not-migrated"),
        (3, "append", "op:nowhere"),
    ]
    assert "dangling" in errors[0].reason and "no item of the ledger" in errors[1].reason


def test_a_reference_to_a_refused_row_says_so() -> None:
    errors = check_references([spec("a", 1, op("broken"))], set(), {"broken": 7})
    assert errors == [RowError(1, "target", "op:broken", "op:broken is the operation of row 7, refused")]


def test_cycles_name_every_row_in_them() -> None:
    specs = [
        spec("a", 2, op("c")),
        spec("b", 5, op("a")),
        spec("c", 9, video(), OpKind.CONCAT, ConcatParams(prepend=(op("b"),))),
        spec("self", 11, op("self")),
        spec("free", 12, video()),
    ]
    errors = check_references(specs, set())
    cycle = [e for e in errors if "cycle" in e.reason]
    assert [(e.row, e.field) for e in cycle] == [(2, "target"), (5, "target"), (9, "prepend"), (11, "target")]
    assert all(e.reason == "reference cycle through rows 2, 5, 9" for e in cycle[:3])
    assert cycle[3].reason == "reference cycle through rows 11"
    assert {e.row for e in errors} == {2, 5, 9, 11}
    with pytest.raises(ValueError, match="cycle among rows 2, 5, 9, 11"):
        order_operations(specs)


def test_dependants_of_refused_operations_are_refused_too() -> None:
    specs = [
        spec("a", 1, op("b")),
        spec("b", 2, op("a")),
        spec("after", 3, op("a")),
        spec("later", 4, op("after")),
        spec("dangling", 5, op("ghost")),
        spec("waits", 6, video(), OpKind.CONCAT, ConcatParams(append=(op("dangling"),))),
        spec("fine", 7, video()),
    ]
    errors = check_references(specs, set())
    by_row = {e.row: e for e in errors}
    assert sorted(r or 0 for r in by_row) == [1, 2, 3, 4, 5, 6]
    assert by_row[3].reason == "waits for op:a (row 1), which is refused"
    assert by_row[4].reason == "waits for op:after (row 3), which is refused"
    assert by_row[6].field == "append"


def test_duplicate_ids_refuse_second_and_later_rows() -> None:
    first = spec("same", 1, video())
    specs = [first, spec("same", 4, video(OTHER)), spec("same", 6, video())]
    errors = check_references(specs, set())
    assert errors == [
        RowError(4, "id", "same", "duplicate operation id (first used at row 1)"),
        RowError(6, "id", "same", "duplicate operation id (first used at row 1)"),
    ]
    derived_id = derive_op_id(OpKind.COPY, video(), CopyParams())
    twin = [
        OperationSpec(derived_id, 1, OpKind.COPY, video(), CopyParams(), id_derived=True),
        OperationSpec(derived_id, 2, OpKind.COPY, video(), CopyParams(), id_derived=True),
    ]
    (error,) = check_references(twin, set())
    assert error.row == 2 and "same operation as row 1" in error.reason
    assert [s.row for s in order_operations(specs)] == [1]  # the first of an id counts


def test_references_that_cannot_name_one_video_are_refused() -> None:
    many = Target(TargetKind.SELECT, "tag=x", Selector(tags=("x",)))
    specs = [
        spec("all", 1, many, OpKind.CUT, CutParams(trim=(TrimRange(0, 3),))),
        spec("moved", 2, op("all"), OpKind.MOVE, MoveParams(OTHER)),  # fan-out: fine
        spec("joined", 3, video(), OpKind.CONCAT, ConcatParams(prepend=(op("moved"),))),
        spec("swap", 4, op("all"), OpKind.REPLACE, ReplaceParams("/m/a.mp4")),
        spec("gone", 5, video(), OpKind.DELETE, DeleteParams()),
        spec("after_delete", 6, op("gone"), OpKind.MOVE, MoveParams(OTHER)),
    ]
    errors = check_references(specs, set())
    assert [(e.row, e.field) for e in errors] == [(3, "prepend"), (4, "target"), (6, "target")]
    assert "one video needed in prepend" in errors[0].reason
    assert "one video needed as the target of replace" in errors[1].reason
    assert "deletes its video" in errors[2].reason

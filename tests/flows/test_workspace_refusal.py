"""A workspace that refuses everything (issue 43): at the first answer that is the workspace's state (a quota,
the balance, the subscription, the e-mail) a run stops, sends nothing further, leaves what it did not attempt
as it was (not failed) and says the code and what to do; the rerun resumes once it is fixed. Every job that
creates meets the emulator's refusal variants: migrate, apply, setup; backup and archive, which create
nothing, run on under them, and archive, which moves, tags and deletes, stops when the workspace refuses
changes too (the variant refuse-changes)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from connectors.error_table import CODE_CLASSES, error_class_for
from connectors.errors import stops_run
from emulator.control import EmulatorControl, Workspace
from flows.apply.options import ApplyOptions
from flows.apply.runner import run_apply
from flows.job import Exit, exit_for
from flows.migrate.runner import run_migration
from flows.setup.options import SetupOptions
from flows.setup.runner import run_up
from state.ledger import Ledger
from state.machine import OpStatus
from tests.flows.apply_fixtures import wait_done, write_ops
from tests.flows.backup_fixtures import backup, make_library
from tests.flows.helpers import (
    cli_env,
    clip_rows,
    creates,
    migrate_args,
    options,
    run_cli,
    settings_for,
    write_inventory,
)
from tests.flows.test_archive import broadcast_world
from tests.flows.test_archive import run as run_archive

#: Each refusal variant, the parameters that let two creates through, and the code and name the run says.
REFUSALS: dict[str, tuple[dict[str, int], int, str]] = {
    "video-quota": ({"video_quota": 2}, 100106, "LIMIT_REACHED"),
    "balance-empty": ({"refuse_after": 2}, 400207, "NOT_ENOUGH_MONEY"),
    "no-billing-account": ({"refuse_after": 2}, 400208, "NO_BILLING_ACCOUNT"),
    "no-payment-method": ({"refuse_after": 2}, 400209, "NO_PAYMENT_METHOD"),
    "subscription-unpaid": ({"refuse_after": 2}, 400212, "SUBSCRIPTION_NOT_PAID"),
    "email-unconfirmed": ({"refuse_after": 2}, 400213, "EMAIL_NOT_CONFIRMED"),
}


def _states(ledger: Path) -> dict[str, int]:
    with Ledger.open(ledger, create=False) as book:
        return {state: n for state, n in book.counts().items() if n}


def _stopped_line(lines: list[str], code: int, name: str) -> str:
    said = [line for line in lines if line.startswith("stopped: the workspace refused")]
    assert len(said) == 1, lines
    assert f"{code} {name}" in said[0] and said[0].endswith("rerun the same command to resume"), said[0]
    return said[0]


@pytest.mark.parametrize(
    ("variant", "status"),
    [*((v, None) for v in sorted(REFUSALS)), ("video-quota", 402), ("video-quota", 403)],
)
def test_migrate_stops_at_the_refusal_leaves_the_rest_planned_and_resumes(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory: Any,
    variant: str,
    status: int | None,
) -> None:
    params, code, name = REFUSALS[variant]
    quota = {} if status is None else {"quota_status": status}  # spec 7 gives the quota no HTTP status
    emu_control.set_variants(emu, [variant], **params, **quota)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 5, metadata=False))
    opts = options(inventory, emu, tmp_path, transfers=1)
    mark = time.time()
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 1, outcome.reasons
    _stopped_line(outcome.reasons, code, name)
    sent = creates(emu_control, emu, since=mark)
    assert [r["status"] < 300 for r in sent] == [True, True, False]  # nothing sent after the refusal
    # the refused item and the two never attempted are planned, not failed; the first two are left where the
    # stop found them (uploaded, or further), for the rerun
    states = _states(tmp_path / "ledger.db")
    assert states["planned"] == 3 and "failed" not in states and sum(states.values()) == 5, states

    emu_control.set_variants(emu, [])  # topped up, paid, confirmed, quota raised
    mark = time.time()
    again = run_migration(opts, settings_for(emu))
    assert again.exit_code == 0, again.reasons
    assert len(creates(emu_control, emu, since=mark)) == 3  # only what was not made
    titles = [v["title"] for v in emu_control.videos(emu)]
    assert len(titles) == len(set(titles)) == 5
    assert _states(tmp_path / "ledger.db") == {"finished": 5}


def test_the_command_ends_with_exit_1_and_one_line_saying_what_to_do(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    emu_control.set_variants(emu, ["balance-empty"], refuse_after=1)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    args = migrate_args(emu, inventory, tmp_path / "ledger.db", transfers=1, wait_timeout=60)
    done = run_cli(args, cli_env(emu))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    line = _stopped_line([line.strip() for line in output.splitlines()], 400207, "NOT_ENOUGH_MONEY")
    assert "top it up" in line
    assert "failed" not in _states(tmp_path / "ledger.db")
    assert emu.token not in output
    status = run_cli(["status", "--ledger", str(tmp_path / "ledger.db")], cli_env(emu))
    last = [line for line in status.stdout.splitlines() if line.startswith("last run:")]
    assert len(last) == 1 and "incomplete; stopped: the workspace refused" in last[0], status.stdout


@pytest.mark.parametrize("variant", ["video-quota", "subscription-unpaid"])
def test_apply_stops_at_the_refusal_leaves_the_units_planned_and_resumes(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    library: dict[str, Any],
    variant: str,
) -> None:
    wait_done(emu_control, emu)
    held = len(emu_control.videos(emu))  # the library's five
    # one more create is let through: the second copy is refused, the third is never sent
    emu_control.set_variants(emu, [variant], video_quota=held + 1, refuse_after=1)
    keys = sorted(library["keys"])
    rows = [{"op": "copy", "id": f"cp{n}", "target": f"key:{keys[n % 2]}"} for n in range(3)]
    ops = write_ops(tmp_path / "ops.csv", rows)
    opts = ApplyOptions(ops=str(ops), ledger=str(library["ledger"]), transfers=1, wait_timeout=60)
    outcome = run_apply(opts, settings_for(emu))
    assert outcome.exit_code == 1, outcome.reasons + outcome.refused
    _, code, name = REFUSALS[variant]
    _stopped_line(outcome.reasons, code, name)
    with Ledger.open(library["ledger"], create=False) as book:
        states = sorted(u.state for u in book.units())
    assert states == ["done", "planned", "planned"], states
    assert any("not made: the workspace refused its call" in line for line in outcome.reasons), (
        outcome.reasons
    )
    assert len(emu_control.videos(emu)) == held + 1

    emu_control.set_variants(emu, [])
    again = run_apply(opts, settings_for(emu))
    assert again.exit_code == 0, again.reasons + again.refused
    assert len(wait_done(emu_control, emu)) == held + 3  # each copy made once


def test_setup_stops_at_the_refusal_and_resumes(tmp_path: Path, emu_control: EmulatorControl) -> None:
    ws = emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)
    events = [{"name": f"Room {n}", "type": "recurring"} for n in range(4)]
    file = tmp_path / "conf.yaml"
    file.write_text(yaml.safe_dump({"parent_id": ws.project_id, "events": events}), encoding="utf-8")
    emu_control.set_variants(ws, ["email-unconfirmed"], refuse_after=2)
    opts = SetupOptions(file=str(file), ledger=str(tmp_path / "ledger.db"), outputs=str(tmp_path / "out"))
    up = run_up(opts, settings_for(ws))
    assert up.exit_code == 1, up.lines
    assert _stopped_line(up.lines, 400213, "EMAIL_NOT_CONFIRMED") == up.lines[-1]
    assert "not attempted: 2 change(s), left for the rerun" in up.lines
    assert not any(line.startswith("failed:") for line in up.lines), up.lines
    with Ledger.open(tmp_path / "ledger.db", create=False) as book:
        assert "400213" in str((book.runs()[-1].summary or {}).get("stopped")), book.runs()[-1]
    made = [r for r in emu_control.requests(ws.workspace_id) if r["method"] == "POST"]
    assert [r["status"] for r in made] == [201, 201, 400]  # nothing after the refusal

    emu_control.set_variants(ws, [])
    again = run_up(opts, settings_for(ws))
    assert again.exit_code == 0, again.lines
    assert sorted(e["name"] for e in _events(ws)) == [f"Room {n}" for n in range(4)]  # each made once


def _events(ws: Workspace) -> list[dict[str, Any]]:
    with httpx.Client(base_url=ws.base_url, headers=ws.headers) as client:
        return list(client.get("/v2/live/events", params={"per_page": 100}).json()["data"])


def test_every_workspace_code_of_the_spec_stops_a_run() -> None:
    refusing = {code for code, cls in CODE_CLASSES.items() if stops_run(cls("x", code=code, status=400))}
    assert {100106, 400207, 400212, 400213} <= refusing
    assert refusing - {100101, 100102, 100103, 100107} == {100106, 400207, 400208, 400209, 400212, 400213}


def test_the_stop_line_names_the_code_and_what_to_do_and_exits_1() -> None:
    exc = error_class_for(400207, 400)("balance", status=400, code=400207, request_id="r-1", operation="init")
    assert str(exc) == (
        "the workspace refused init: 400207 NOT_ENOUGH_MONEY (request r-1): the workspace's balance is"
        " insufficient: top it up; nothing further was sent: rerun the same command to resume"
    )
    assert exit_for(exc) == (Exit.INCOMPLETE, str(exc))
    for status in (400, 402, 403):  # spec 7 gives the quota no status: any but 429 is the quota
        assert stops_run(error_class_for(100106, status)("limit", status=status, code=100106))
    assert not stops_run(error_class_for(100106, 429)("too many", status=429, code=100106))  # the rate limit


def test_a_refused_material_stops_migrate_and_the_rerun_attaches_it_once(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    slides = tmp_path / "slides.pdf"
    slides.write_bytes(b"%PDF" + bytes(range(256)) * 40)
    source = str(clip_factory(1.0, name="talk.mp4"))
    inventory = write_inventory(
        tmp_path / "inv.csv", [{"source": source, "title": "Talk", "attachments": "slides.pdf"}]
    )
    emu_control.set_variants(emu, ["subscription-unpaid"], refuse_after=1)  # the video, not its material
    opts = options(inventory, emu, tmp_path, via="single")
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 1, outcome.reasons
    _stopped_line(outcome.reasons, 400212, "SUBSCRIPTION_NOT_PAID")
    assert "failed" not in _states(tmp_path / "ledger.db")
    assert [v.get("additional_materials") for v in emu_control.videos(emu)] == [None]

    emu_control.set_variants(emu, [])
    again = run_migration(opts, settings_for(emu))
    assert again.exit_code == 0, again.reasons
    (video,) = emu_control.videos(emu)
    assert [m["original_name"] for m in video["additional_materials"]] == ["slides.pdf"]


def test_backup_reads_only_so_a_refusing_workspace_does_not_stop_it(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory: Any
) -> None:
    make_library(tmp_path, emu_control, emu, clip_factory, n=3)
    emu_control.set_variants(emu, ["video-quota", "balance-empty"], video_quota=0)  # every create refused
    outcome = backup(emu, str(tmp_path / "backup"), tmp_path / "backup.db")
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.counts == {"copied": 3}


def test_archive_moves_and_tags_so_a_refusing_workspace_does_not_stop_it(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    broadcast_world(emu_control, emu, {"Show": 2}, chat=1)
    project, _folder = emu_control.create_project(emu)
    emu_control.set_variants(emu, ["video-quota", "subscription-unpaid"], video_quota=0)  # no create passes
    outcome = run_archive(emu, tmp_path, to=str(tmp_path / "archive"), move_to=project, tags=["archived"])
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.counts == {"archived": 2}
    assert {v["project_id"] for v in emu_control.videos(emu)} == {project}


def test_archive_stops_at_a_refused_change_leaves_the_rest_stopped_and_resumes(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl
) -> None:
    broadcast_world(emu_control, emu, {"Show": 3}, chat=1)
    project, _folder = emu_control.create_project(emu)
    # the workspace refuses changes too: the first recording's move and tags pass, the second's move is not
    emu_control.set_variants(emu, ["subscription-unpaid", "refuse-changes"], refuse_after=2)
    since = time.time()
    options = {"to": str(tmp_path / "archive"), "move_to": project, "tags": ["archived"], "transfers": 1}
    outcome = run_archive(emu, tmp_path, **options)
    assert outcome.exit_code == 1, outcome.reasons
    _stopped_line(outcome.reasons, 400212, "SUBSCRIPTION_NOT_PAID")
    assert outcome.counts == {"archived": 1, "stopped": 2}, outcome.reasons
    assert outcome.stopped["kind"] == "workspace-refused"
    writes = [r for r in emu_control.requests(emu.workspace_id, since=since) if r["method"] != "GET"]
    assert [r["status"] for r in writes] == [200, 200, 400], writes  # nothing sent after the refusal
    with Ledger.open(tmp_path / "ledger.db", create=False) as book:
        assert not book.ops(status=OpStatus.FAILED)
    assert sorted(v["project_id"] == project for v in emu_control.videos(emu)) == [False, False, True]

    emu_control.set_variants(emu, [])
    since = time.time()
    again = run_archive(emu, tmp_path, **options)
    assert again.exit_code == 0, again.reasons
    assert again.counts == {"archived": 3}, again.reasons
    writes = [r for r in emu_control.requests(emu.workspace_id, since=since) if r["method"] != "GET"]
    assert [r["status"] for r in writes] == [200] * 4, writes  # the two stopped ones' move and tags, once
    videos = emu_control.videos(emu)
    assert {v["project_id"] for v in videos} == {project} and all(v["tags"] == ["archived"] for v in videos)

"""Readiness by media.update.status webhooks: the emulator posts them, the run's receiver records them."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.connectors.waiting import poll
from tests.flows.helpers import (
    api_calls,
    cli_env,
    clip_rows,
    free_port,
    migrate_args,
    options,
    run_cli,
    settings_for,
    write_inventory,
)
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.migrate.runner import MigrateOutcome, run_migration
from videoferry.tasks.migrate.context import MigrateContext


def _hooked(emu: Workspace, emu_control: EmulatorControl, monkeypatch: pytest.MonkeyPatch) -> str:
    """The service's webhooks sent with Basic credentials to a free loopback port the run will require them
    on; the HOST:PORT to listen on."""
    port = free_port()
    monkeypatch.setenv("VIDEOFERRY_WEBHOOK_USERNAME", "hook")
    monkeypatch.setenv("VIDEOFERRY_WEBHOOK_PASSWORD", "hook-secret")
    emu_control.set_webhook(emu, f"http://127.0.0.1:{port}/", username="hook", password="hook-secret")
    return f"127.0.0.1:{port}"


def test_webhooks_carry_readiness(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listen = _hooked(emu, emu_control, monkeypatch)
    emu_control.set_poll_rule(emu, 5.0)  # the spec's rule: the webhooks come before a poll would
    emu_control.set_processing(emu, "timed", 1.0)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 5, metadata=False))
    mark = time.time()
    outcome = run_migration(
        options(inventory, emu, tmp_path, webhook_listen=listen),
        settings_for(emu),
    )
    assert outcome.exit_code == 0, outcome.reasons
    calls = api_calls(emu_control, emu, since=mark)
    # One preflight list, five inits, the listing that confirms the claims that came (one call covers up to
    # 100 videos, at most one listing per poll interval) and at most one poll before the first claim came.
    lists = [c for c in calls if c["method"] == "GET" and c["path"] == "/v1/videos"]
    assert len(lists) <= 4
    assert len([c for c in calls if c["path"] == "/v2/init"]) == 5


def test_claims_are_confirmed_in_batches_not_per_arrival(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Twelve videos whose claims arrive one by one, a listing allowed every 0.2 s: they are confirmed
    together (tasks/migrate/claims.Claims.due), not by a listing per arrival."""
    listen = _hooked(emu, emu_control, monkeypatch)
    emu_control.set_poll_rule(emu, 0.2)  # a listing allowed every 0.2 s: one per arrival would be possible
    emu_control.set_processing(emu, "timed", 0.5)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 12, metadata=False))
    mark = time.time()
    opts = options(inventory, emu, tmp_path, webhook_listen=listen, transfers=1)  # claims come one by one
    outcome = run_migration(opts, settings_for(emu))
    assert outcome.exit_code == 0, outcome.reasons
    calls = api_calls(emu_control, emu, since=mark)
    lists = [c for c in calls if c["method"] == "GET" and c["path"] == "/v1/videos"]
    # One preflight list, at most one poll before the first claim came, and listings of the claims in batches
    # (on a quiet machine one of all twelve: 3 lists; under load claims a poll interval apart are confirmed
    # apart, so read 4 once in CI), never one per arrival (13 or more).
    assert len(lists) <= 2 + 12 // 3, [round(c["time"] - mark, 2) for c in lists]
    assert len([c for c in calls if c["path"] == "/v2/init"]) == 12
    assert outcome.summary["counts"]["finished"] == 12


#: Every false claim the emulator can forge, and every credential it can forge it with.
CLAIMS = ("done-processing", "done-unknown", "error-done")
AUTHS = ("none", "wrong", "configured")


def test_forged_webhooks_change_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Webhooks are claims: a forgery without the credentials is refused (401), one with them (only the
    service can tell it is false) is looked at by listing and changes nothing; the service's own claims end
    the run."""
    listen = _hooked(emu, emu_control, monkeypatch)
    emu_control.set_poll_rule(emu, 5.0)  # the spec's rule: a forged claim cannot hide behind a poll
    emu_control.set_processing(emu, "manual")
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 3, metadata=False))
    opts = options(inventory, emu, tmp_path, webhook_listen=listen)
    started: dict[str, MigrateContext] = {}
    ended: dict[str, MigrateOutcome] = {}

    def migrate() -> None:
        ended["outcome"] = run_migration(opts, settings_for(emu), on_start=lambda c: started.update(ctx=c))

    thread = threading.Thread(target=migrate, name="migrate")
    thread.start()
    try:
        found = poll(lambda: started.get("ctx"), 60, "the run to start")
        assert found is not None
        ctx = found
        poll(lambda: len(ctx.ledger.items(["uploaded", "processing"])) == 3, 60, "three uploads")
        owner = {i.video_id: i.key for i in ctx.ledger.items() if i.video_id}
        first, second, _third = sorted(owner, key=lambda v: owner[v] or "")
        emu_control.set_video_status(emu, first, "done")  # the service's own claim
        poll(lambda: _state(ctx, owner[first]) in ("done", "finished"), 60, "the service's done")
        answers = {}
        for auth in AUTHS:
            for claim in CLAIMS:
                target = {"done-processing": second, "error-done": first}.get(claim)
                sent = emu_control.forge_webhook(emu, claim, video_id=target, auth=auth)  # type: ignore[arg-type]
                answers[(claim, auth)] = sent["status"]
        assert {a: s for a, s in answers.items() if a[1] != "configured"} == {
            (c, a): 401 for c in CLAIMS for a in AUTHS if a != "configured"
        }
        assert all(answers[(c, "configured")] == 200 for c in CLAIMS)
        assert ctx.webhooks is not None and ctx.webhooks.unauthorised == 6
        # done for a video still processing: refuted by a listing; done for an id of nobody and error for a
        # video already finished: no call at all.
        poll(lambda: ctx.claims_refuted >= 1 and ctx.claims_ignored >= 2, 60, "the forged claims looked at")
        states = {i.key: i.state for i in ctx.ledger.items()}
        assert states[owner[second]] == "processing", states
        assert states[owner[first]] in ("done", "finished") and "error" not in states.values(), states
        for video_id in owner:
            if video_id != first:
                emu_control.set_video_status(emu, video_id, "done")
    finally:
        thread.join(timeout=120)
    assert not thread.is_alive(), "the run did not end"
    outcome = ended["outcome"]
    assert outcome.exit_code == 0, outcome.reasons
    assert outcome.summary["counts"]["finished"] == 3
    assert {v["status"] for v in emu_control.videos(emu)} == {"done"}


def _state(ctx: MigrateContext, key: str | None) -> str | None:
    item = ctx.ledger.get(key or "")
    return item.state if item is not None else None


def test_a_receiver_beyond_loopback_without_credentials_exits_2(
    tmp_path: Path, emu: Workspace, clip_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("VIDEOFERRY_WEBHOOK_USERNAME", "VIDEOFERRY_WEBHOOK_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    args = migrate_args(emu, inventory, tmp_path / "l.db", transfers=1, wait_timeout=30)
    done = run_cli([*args, "--webhook-listen", f"0.0.0.0:{free_port()}"], cli_env(emu))
    assert done.returncode == 2, done.stderr
    assert "VIDEOFERRY_WEBHOOK_USERNAME" in done.stderr + done.stdout
    assert not (tmp_path / "l.db").exists()  # refused before anything ran

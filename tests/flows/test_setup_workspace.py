"""setup and the workspace's objects: privacy domains renamed, archived and pruned; DRM callbacks pruned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.flows import test_setup
from tests.flows.test_setup import now, write, writes
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up
from videoferry.state.ledger import Ledger

#: The workspace (limits raised) and its settings: test_setup's fixtures.
ws, settings = test_setup.ws, test_setup.settings


def domains(settings: Settings) -> dict[str, tuple[str, bool]]:
    """domain -> (id, archived)."""
    with VideoClient.from_settings(settings) as client:
        return {d.domain or "": (d.id, bool(d.archived)) for d in client.privacy_domains.iter_domains()}


def options(file: str, tmp_path: Path, *, prune: bool = False) -> SetupOptions:
    return SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "o"), prune=prune)


def test_domains_renamed_archived_then_pruned(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data: dict[str, Any] = {"privacy_domains": ["a.example.com", "b.example.com", "c.example.com"]}
    file = write(tmp_path / "ws.yaml", data)
    assert run_up(options(file, tmp_path), settings).exit_code == 0
    before = domains(settings)

    data["privacy_domains"] = [
        {"domain": "a2.example.com", "renamed_from": "a.example.com"},
        {"domain": "b.example.com", "archived": True},
        "c.example.com",
    ]
    write(tmp_path / "ws.yaml", data)
    shown = "\n".join(run_plan(options(file, tmp_path), settings).lines)
    assert "domain: a.example.com -> a2.example.com" in shown and "renamed from a.example.com" in shown
    assert "archived: False -> True" in shown
    assert run_plan(options(file, tmp_path), settings, drift=True).exit_code == 1
    assert run_up(options(file, tmp_path), settings).exit_code == 0
    after = domains(settings)
    assert after["a2.example.com"] == (before["a.example.com"][0], False)  # the same domain, renamed
    assert after["b.example.com"] == (before["b.example.com"][0], True)
    assert set(after) == {"a2.example.com", "b.example.com", "c.example.com"}
    assert run_plan(options(file, tmp_path), settings, drift=True).exit_code == 0
    mark = now(emu_control, ws)
    assert run_up(options(file, tmp_path), settings).exit_code == 0 and writes(emu_control, ws, mark) == []

    # restored by the file, the others pruned (the archived one too: the file is the whole list)
    data["privacy_domains"] = ["b.example.com"]
    write(tmp_path / "ws.yaml", data)
    planned = run_plan(options(file, tmp_path), settings)
    assert sum("not in the file (kept: --prune deletes it)" in line for line in planned.lines) == 2
    assert run_plan(options(file, tmp_path, prune=True), settings).counts["delete"] == 2
    assert run_up(options(file, tmp_path, prune=True), settings).exit_code == 0
    assert domains(settings) == {"b.example.com": (before["b.example.com"][0], False)}
    assert run_plan(options(file, tmp_path, prune=True), settings, drift=True).exit_code == 0


def test_the_file_refuses_a_domain_named_twice(tmp_path: Path, settings: Settings) -> None:
    data = {
        "privacy_domains": ["a.example.com", {"domain": "b.example.com", "renamed_from": "A.example.com"}]
    }
    file = write(tmp_path / "ws.yaml", data)
    planned = run_plan(options(file, tmp_path), settings)
    assert planned.exit_code == 2
    assert any("privacy_domains[1]: 'a.example.com' named twice" in line for line in planned.lines)


def test_drm_callbacks_the_file_drops_are_deleted_with_prune(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl
) -> None:
    data: dict[str, Any] = {
        "drm": {
            "workspace": {"url": "http://127.0.0.1:9/cb", "strict": True},
            "projects": {ws.project_id: {"url": "http://127.0.0.1:9/p", "strict": False}},
        }
    }
    file = write(tmp_path / "ws.yaml", data)
    assert run_up(options(file, tmp_path), settings).exit_code == 0
    del data["drm"]["projects"]
    write(tmp_path / "ws.yaml", data)
    kept = run_plan(options(file, tmp_path), settings, drift=True)
    assert kept.exit_code == 0  # not drift without --prune, as with domains
    assert any(f"project {ws.project_id}" in line and "kept" in line for line in kept.lines)
    pruning = options(file, tmp_path, prune=True)
    shown = "\n".join(run_plan(pruning, settings).lines)
    assert (
        f"delete    drm      project {ws.project_id}" in shown and "workspace" not in shown.split("plan:")[0]
    )
    # the DELETE's answer is lost: the client's repeat meets a 404, which counts as deleted
    emu_control.set_faults(
        ws, [{"kind": "drop_after_commit", "method": "DELETE", "path": "^/v1/drm/auth/", "times": 1}]
    )
    mark = now(emu_control, ws)
    assert run_up(pruning, settings).exit_code == 0
    emu_control.clear_faults(ws)
    assert [r["dropped"] for r in writes(emu_control, ws, mark)] == [True, False]
    with VideoClient.from_settings(settings) as client:
        assert client.drm.find(ws.project_id) is None and client.drm.find() is not None
    assert run_plan(pruning, settings, drift=True).exit_code == 0

    # an empty drm section: the workspace's callback goes too; no drm key: DRM is not the file's to prune
    data["drm"] = {}
    write(tmp_path / "ws.yaml", data)
    assert run_up(pruning, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:
        assert client.drm.find() is None
        client.drm.update(None, url="http://127.0.0.1:9/by-hand", strict=False)
    write(tmp_path / "ws.yaml", {"privacy_domains": []})
    assert run_plan(pruning, settings, drift=True).exit_code == 0
    with Ledger.open(str(tmp_path / "l.db"), create=False) as book:
        deleted = [op.params["project_id"] for op in book.ops(kind="delete_drm", status="done")]
    assert deleted == [ws.project_id, None]

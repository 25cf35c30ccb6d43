"""A command line run goes through Prefect by default when a Prefect server is configured (PREFECT_API_URL or
the active profile), says so first with its flow run's page; without one it runs plainly (no temporary
server); --prefect / --no-prefect still decide."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, write_inventory
from videoferry.emulator.control import Workspace
from videoferry.flows.prefect_server import configured_api_url


def _args(ws: Workspace, inventory: Path, ledger: Path, *flags: str) -> list[str]:
    """migrate's arguments with neither --prefect nor --no-prefect, then `flags`."""
    args = migrate_args(ws, inventory, ledger, transfers=1, wait_timeout=120)
    return [a for a in args if a != "--no-prefect"] + list(flags)


def _flow_runs(api_url: str) -> list[dict[str, object]]:
    answer = httpx.post(f"{api_url}/flow_runs/filter", json={"limit": 50, "offset": 0}, timeout=30)
    answer.raise_for_status()
    return list(answer.json())


def test_a_configured_server_is_used_by_default(
    tmp_path: Path, emu: Workspace, clip_factory, prefect_server: dict[str, str]
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    env = {**cli_env(emu), **prefect_server}
    done = run_cli(_args(emu, inventory, tmp_path / "ledger.db"), env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    first = done.stderr.splitlines()[0]
    runs = _flow_runs(prefect_server["PREFECT_API_URL"])
    assert len(runs) == 1 and runs[0]["state_type"] == "COMPLETED"
    assert first.startswith("through Prefect: flow run ") and str(runs[0]["id"]) in first
    assert emu.token not in done.stdout + done.stderr

    # --no-prefect still decides: no flow run more.
    done = run_cli(_args(emu, inventory, tmp_path / "ledger2.db", "--no-prefect"), env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "through Prefect" not in done.stderr
    assert len(_flow_runs(prefect_server["PREFECT_API_URL"])) == 1

    # The active profile names the server (no PREFECT_API_URL in the environment): through it too.
    home = tmp_path / "user-prefect-home"
    home.mkdir()
    url = prefect_server["PREFECT_API_URL"]
    (home / "profiles.toml").write_text(f'active = "team"\n[profiles.team]\nPREFECT_API_URL = "{url}"\n')
    by_profile = {k: v for k, v in env.items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(home)}
    done = run_cli(_args(emu, inventory, tmp_path / "ledger3.db"), by_profile)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert done.stderr.startswith("through Prefect: flow run ")
    assert len(_flow_runs(url)) == 2


def test_without_a_server_the_run_is_plain(tmp_path: Path, emu: Workspace, clip_factory) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    env = {k: v for k, v in cli_env(emu).items() if k not in ("PREFECT_API_URL", "PREFECT_PROFILE")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_LOGGING_LEVEL="INFO")
    done = run_cli(_args(emu, inventory, tmp_path / "ledger.db"), env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "Prefect" not in out  # no flow run, no temporary server
    assert not (tmp_path / "prefect-home").exists()


def test_the_active_profile_names_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "profiles.toml").write_text(
        'active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://prefect.example.test/api"\n'
        '[profiles.local]\nPREFECT_SERVER_ANALYTICS_ENABLED = "false"\n'
    )
    assert configured_api_url({"PREFECT_HOME": str(home)}) == "http://prefect.example.test/api"
    assert configured_api_url({"PREFECT_HOME": str(home), "PREFECT_PROFILE": "local"}) is None
    assert (
        configured_api_url({"PREFECT_HOME": str(home), "PREFECT_API_URL": "http://x/api"}) == "http://x/api"
    )
    assert configured_api_url({"PREFECT_HOME": str(tmp_path / "none")}) is None

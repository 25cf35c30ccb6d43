"""--prefect on a temporary server: no "View at" link to a page that is gone when the command returns."""

from __future__ import annotations

from pathlib import Path

from tests.flows.helpers import cli_env, clip_rows, migrate_args, run_cli, write_inventory
from videoferry.emulator.control import Workspace
from videoferry.flows.prefect_job import TEMPORARY_SERVER


def test_a_temporary_server_is_said_instead_of_a_dead_link(
    tmp_path: Path, emu: Workspace, clip_factory
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    env = {k: v for k, v in cli_env(emu).items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PREFECT_LOGGING_LEVEL="INFO")
    args = migrate_args(emu, inventory, tmp_path / "ledger.db", transfers=1, wait_timeout=120, prefect=True)
    done = run_cli(args, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "View at" not in out  # the temporary server (no UI) stops when the command returns
    assert TEMPORARY_SERVER in out


def test_a_named_server_keeps_its_link(
    tmp_path: Path, emu: Workspace, clip_factory, prefect_server: dict[str, str]
) -> None:
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 1, metadata=False))
    env = {**cli_env(emu), **prefect_server, "PREFECT_LOGGING_LEVEL": "INFO"}
    args = migrate_args(emu, inventory, tmp_path / "ledger.db", transfers=1, wait_timeout=120, prefect=True)
    done = run_cli(args, env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "View at " in out and TEMPORARY_SERVER not in out

"""The credentials blocks (videoferry.blocks) on a real Prefect server: saved and loaded, a job's flow run
with a block instead of the variables, a variable set still winning, a source's token from its block."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from emulator.control import EmulatorControl, Workspace
from emulator.platforms.server import Standin, StandinControl
from tests.flows.helpers import clip_rows, options, write_inventory

SERVICE_VARIABLES = (
    "VIDEOFERRY_API_URL",
    "VIDEOFERRY_UPLOAD_URL",
    "VIDEOFERRY_TOKEN",
    "VIDEOFERRY_TOKEN_BLOCK",
)


@pytest.mark.flow
def test_block_round_trip_keeps_the_token_secret(prefect_harness: None) -> None:
    from prefect.client.orchestration import get_client

    from videoferry.blocks import VideoferryCredentials

    VideoferryCredentials(
        token=SecretStr("tok-round-trip"),
        api_url="https://api.example.test/v1",
        upload_url="https://up.example.test/",
    ).save("round-trip", overwrite=True)
    loaded = VideoferryCredentials.load("round-trip")
    assert isinstance(loaded, VideoferryCredentials)
    assert loaded.environment() == {
        "VIDEOFERRY_TOKEN": "tok-round-trip",
        "VIDEOFERRY_API_URL": "https://api.example.test/v1",
        "VIDEOFERRY_UPLOAD_URL": "https://up.example.test/",
    }
    assert "tok-round-trip" not in repr(loaded) + str(loaded)
    with get_client(sync_client=True) as client:  # what the UI reads: the token obfuscated
        document = client.read_block_document_by_name(
            "round-trip", "videoferry-credentials", include_secrets=False
        )
    assert "tok-round-trip" not in str(document.data)


@pytest.mark.flow
def test_migrate_flow_runs_with_the_credentials_block(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.client.orchestration import get_client

    from flows.migrate.flow import run_flow
    from videoferry.blocks import VideoferryCredentials

    for name in SERVICE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    VideoferryCredentials(token=SecretStr(emu.token), api_url=emu.base_url, upload_url=emu.upload_url).save(
        "emulator", overwrite=True
    )
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "emulator")
    inventory = write_inventory(tmp_path / "inv.csv", clip_rows(clip_factory, 2))
    outcome = run_flow(options(inventory, emu, tmp_path))
    assert outcome.exit_code == 0, outcome.reasons
    assert len(emu_control.videos(emu)) == 2
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(limit=20)
    assert runs and all(emu.token not in str(run.parameters) for run in runs)


@pytest.mark.flow
def test_a_variable_set_wins_over_the_block(prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.service import service_settings
    from videoferry.blocks import VideoferryCredentials

    for name in SERVICE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    VideoferryCredentials(
        token=SecretStr("tok-from-block"),
        api_url="https://block.example.test/v1",
        upload_url="https://block.example.test/u",
    ).save("partly", overwrite=True)
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "partly")
    monkeypatch.setenv("VIDEOFERRY_API_URL", "https://env.example.test/v1")
    settings = service_settings()
    assert settings.api_url == "https://env.example.test/v1"  # the variable
    assert settings.upload_url == "https://block.example.test/u"  # the block, for what is not set
    assert settings.token == "tok-from-block"


@pytest.mark.flow
def test_a_missing_block_is_named(prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from connectors.config import ConfigError
    from tasks.service import service_settings

    for name in SERVICE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "no-such-block")
    with pytest.raises(ConfigError, match="VIDEOFERRY_CREDENTIALS_BLOCK=no-such-block"):
        service_settings()


@pytest.mark.flow
def test_inventory_reads_the_vimeo_block(
    prefect_harness: None, vimeo_standin: tuple[Standin, StandinControl], tmp_path: Path
) -> None:
    from flows.inventory.options import InventoryOptions
    from flows.inventory.runner import run_inventory
    from videoferry.blocks import VimeoCredentials

    standin, control = vimeo_standin
    control.seed(videos=[{"id": "11", "name": "Keynote"}])
    VimeoCredentials(token=SecretStr(standin.token), api_url=standin.base_url).save(
        "vimeo-test", overwrite=True
    )
    out = tmp_path / "vimeo.csv"
    outcome = run_inventory(
        InventoryOptions(source="vimeo:", out=str(out)), env={"VIDEOFERRY_VIMEO_BLOCK": "vimeo-test"}
    )
    assert outcome.exit_code == 0, outcome.error
    assert "Keynote" in out.read_text()
    assert standin.token not in out.read_text() + "\n".join(outcome.lines)


@pytest.mark.flow
def test_prefect_block_register_finds_the_three_blocks(prefect_harness: None) -> None:
    # Only the three concrete blocks: their base (tasks.blocks.CredentialsBlock) is not registered.
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value())}
    done = subprocess.run(
        [sys.executable, "-m", "prefect", "block", "register", "-m", "videoferry.blocks"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Successfully registered 3 blocks" in done.stdout, done.stdout
    with get_client(sync_client=True) as client:
        for slug in (
            "videoferry-credentials",
            "videoferry-vimeo-credentials",
            "videoferry-wistia-credentials",
        ):
            assert client.read_block_type_by_slug(slug).slug == slug

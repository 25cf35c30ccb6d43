"""S3 through a prefect-aws AwsCredentials block (VIDEOFERRY_AWS_CREDENTIALS_BLOCK): the block saved on a real
Prefect server, no AWS variable in the environment, and a migration from an S3 inventory onto a remote ledger
(boto3 and Litestream) and S3 reports against moto's server; the environment's variables win when set."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.control import EmulatorControl, Workspace
from tests.flows.helpers import clip_rows
from tests.flows.remote_helpers import TEST_LEASE, replica
from tests.flows.test_deploy_remote import put_csv, s3_rows

pytest.importorskip("prefect_aws", reason="the aws extra (pip install -e '.[dev]' brings it)")

BLOCK = "videoferry-s3"
#: The block's secret key (moto's server takes any): it must never be seen outside the block.
SECRET = "vf-aws-secret-5b1f0c9e2d7a4e83"
#: Every variable boto3's chain or Litestream could take credentials or an endpoint from.
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "VIDEOFERRY_S3_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


def save_block(s3_server: str) -> None:
    from prefect_aws import AwsCredentials
    from pydantic import SecretStr

    AwsCredentials(
        aws_access_key_id="testing",
        aws_secret_access_key=SecretStr(SECRET),
        region_name="us-east-1",
        aws_client_parameters={"endpoint_url": s3_server},  # type: ignore[arg-type]
    ).save(BLOCK, overwrite=True)


def without_aws_variables(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    """Nothing but the block can give boto3 or Litestream credentials or an endpoint."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.flow
def test_a_migration_reaches_s3_with_the_block_s_credentials_only(
    prefect_harness: None,
    s3_server: str,
    s3_bucket: str,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    import videoferry
    from connectors.aws_block import load_aws_block

    save_block(s3_server)
    load_aws_block.cache_clear()
    rows = s3_rows(s3_bucket, clip_rows(clip_factory, 2, metadata=False))
    inventory = put_csv(s3_bucket, "in/inventory.csv", tmp_path, rows)
    ledger = f"s3://{s3_bucket}/videoferry/ledger.db"
    caplog.set_level(logging.DEBUG)
    with monkeypatch.context() as env:
        without_aws_variables(env, tmp_path)
        env.setenv("VIDEOFERRY_AWS_CREDENTIALS_BLOCK", BLOCK)
        env.setenv("VIDEOFERRY_API_URL", emu.base_url)
        env.setenv("VIDEOFERRY_UPLOAD_URL", emu.upload_url)
        env.setenv("VIDEOFERRY_TOKEN", emu.token)
        env.setenv("VIDEOFERRY_WORKDIR", str(tmp_path / "work"))
        env.setenv("VIDEOFERRY_LEDGER_LEASE", TEST_LEASE)
        outcome = videoferry.migrate(
            inventory,
            parent_id=emu.project_id,
            ledger=ledger,
            report_dir=f"s3://{s3_bucket}/reports/",
            prefect=False,
        )
    assert outcome.exit_code == 0, outcome.reasons
    states, _ = replica(ledger, s3_server, lambda book: [item.state for item in book.items()])
    assert states == ["finished", "finished"]  # Litestream put the ledger back with the block's credentials
    assert any(name.startswith("s3://") for name in outcome.report_files), outcome.report_files
    assert sorted(v["title"] for v in emu_control.videos(emu)) == sorted(r["title"] for r in rows)
    assert SECRET not in caplog.text and SECRET not in str(outcome.as_dict())


@pytest.mark.flow
def test_the_environment_s_variables_win_over_the_block(
    prefect_harness: None, s3_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors.aws_block import aws_block_environment, load_aws_block
    from connectors.litestream import litestream_env
    from connectors.s3 import S3Config

    save_block(s3_server)
    load_aws_block.cache_clear()
    without_aws_variables(monkeypatch, tmp_path)
    monkeypatch.setenv("VIDEOFERRY_AWS_CREDENTIALS_BLOCK", BLOCK)
    assert S3Config.from_env() == S3Config(endpoint_url=s3_server, region="us-east-1", block=BLOCK)
    filled = litestream_env(block=BLOCK)
    assert filled["AWS_ACCESS_KEY_ID"] == "testing" and filled["AWS_ENDPOINT_URL"] == s3_server
    assert filled["AWS_SECRET_ACCESS_KEY"] == SECRET
    assert SECRET not in repr(S3Config.from_env())  # the config names the block, never its secret

    monkeypatch.setenv("VIDEOFERRY_S3_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-environment")
    assert S3Config.from_env() == S3Config(endpoint_url="http://127.0.0.1:9")  # the chain's, no block
    assert litestream_env(block=BLOCK)["AWS_ACCESS_KEY_ID"] == "from-the-environment"
    assert set(aws_block_environment(BLOCK)) >= {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"}


@pytest.mark.flow
def test_a_block_that_cannot_be_read_is_configuration_to_fix(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connectors.aws_block import load_aws_block
    from connectors.config import ConfigError
    from connectors.s3 import S3Config

    load_aws_block.cache_clear()
    without_aws_variables(monkeypatch, tmp_path)
    monkeypatch.setenv("VIDEOFERRY_AWS_CREDENTIALS_BLOCK", "no-such-block")
    with pytest.raises(ConfigError, match="VIDEOFERRY_AWS_CREDENTIALS_BLOCK=no-such-block"):
        S3Config.from_env()

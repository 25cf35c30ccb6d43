"""S3 credentials from a prefect-aws AwsCredentials block (VIDEOFERRY_AWS_CREDENTIALS_BLOCK names it)."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from connectors.config import ConfigError

if TYPE_CHECKING:
    import boto3

__all__ = [
    "AWS_BLOCK_VARIABLE",
    "aws_block_environment",
    "aws_block_name",
    "aws_block_session",
    "load_aws_block",
]

#: The variable naming the block (a name is no secret: a deployment's env may hold it).
AWS_BLOCK_VARIABLE = "VIDEOFERRY_AWS_CREDENTIALS_BLOCK"
#: Either set in the environment: boto3's own chain wins, as a variable set wins over every block.
CHAIN_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE")
#: The block's fields as the AWS variables Litestream's SDK reads.
_VARIABLES = {
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_session_token": ("AWS_SESSION_TOKEN",),
    "profile_name": ("AWS_PROFILE",),
    "region_name": ("AWS_REGION", "AWS_DEFAULT_REGION"),
}


def aws_block_name(env: Mapping[str, str] | None = None) -> str | None:
    """The AwsCredentials block S3 is reached with: VIDEOFERRY_AWS_CREDENTIALS_BLOCK's value, unless the
    environment sets AWS_ACCESS_KEY_ID or AWS_PROFILE (then the environment's chain wins)."""
    env = os.environ if env is None else env
    name = env.get(AWS_BLOCK_VARIABLE, "").strip()
    if not name or any(env.get(variable, "").strip() for variable in CHAIN_VARIABLES):
        return None
    return name


@functools.cache
def load_aws_block(name: str) -> Any:
    """The AwsCredentials block of that name, read once per process from the Prefect API in use;
    ConfigError naming the variable and the block when it cannot be (prefect-aws missing: the aws extra)."""
    try:
        from prefect_aws import AwsCredentials
    except ImportError:
        raise ConfigError(
            f"{AWS_BLOCK_VARIABLE}={name}: prefect-aws is not installed (pip install 'videoferry[aws]')"
        ) from None
    try:
        return AwsCredentials.load(name)  # synchronous here (no event loop runs this)
    except Exception as exc:  # missing, another kind of block, or the Prefect API unreachable
        raise ConfigError(
            f"{AWS_BLOCK_VARIABLE}={name}: the Prefect block could not be read as aws-credentials"
            f" ({type(exc).__name__}); create it (prefect block register -m prefect_aws, then the UI's Blocks"
            " page) or set AWS_ACCESS_KEY_ID / AWS_PROFILE"
        ) from None


def aws_block_session(name: str) -> boto3.session.Session:
    """A new boto3 session with the block's credentials, profile and region (prefect-aws makes it)."""
    session: boto3.session.Session = load_aws_block(name).get_boto3_session()
    return session


def aws_block_endpoint(name: str) -> str | None:
    """The S3 endpoint the block's client parameters name (None: AWS)."""
    parameters = getattr(load_aws_block(name), "aws_client_parameters", None)
    endpoint = getattr(parameters, "endpoint_url", None)
    return str(endpoint) if endpoint else None


def aws_block_region(name: str) -> str | None:
    """The region the block names (None: boto3's own resolution)."""
    region = load_aws_block(name).region_name
    return str(region) if region else None


def aws_block_environment(name: str) -> dict[str, str]:
    """The AWS variables the block stands for (key, secret, session token, profile, region, endpoint), for a
    process that reads its credentials from the environment (Litestream). Secrets in clear: never log this."""
    block = load_aws_block(name)
    values: dict[str, str] = {}
    for field, variables in _VARIABLES.items():
        value: Any = getattr(block, field, None)
        if hasattr(value, "get_secret_value"):
            value = value.get_secret_value()
        if value:
            values.update(dict.fromkeys(variables, str(value)))
    endpoint = aws_block_endpoint(name)
    if endpoint:
        values["AWS_ENDPOINT_URL"] = endpoint
    return values

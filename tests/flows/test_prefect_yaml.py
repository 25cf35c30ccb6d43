"""prefect.yaml names a real flow, and its parameters are exactly the flow's parameters."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Any

import yaml

from flows.migrate import MigrateOptions

ROOT = Path(__file__).resolve().parents[2]

#: Parameters whose value in prefect.yaml is an example of a site's own (paths, the inventory).
SITE_VALUES = {"inventory", "ledger", "report_dir"}
#: Flow parameters that are connection settings, not MigrateOptions (the token is never one).
SETTINGS_PARAMS = {"api_url", "upload_url"}


def _deployment() -> tuple[dict[str, Any], dict[str, Any], Any]:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = config["deployments"]
    path, name = deployment["entrypoint"].split(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return config, deployment, getattr(module, name)


def test_deployment_matches_the_flow() -> None:
    config, deployment, flow = _deployment()
    assert flow.name == "videoferry-migrate"
    params = inspect.signature(flow.fn).parameters
    # Exactly the flow's parameters, in the flow's order: none missing, none the flow would refuse.
    assert list(deployment["parameters"]) == list(params)
    assert "token" not in str(config).lower().replace("videoferry_token", "")
    assert not any("token" in name or "secret" in name for name in params)


def test_deployment_values_are_the_flow_defaults() -> None:
    _config, deployment, flow = _deployment()
    params = inspect.signature(flow.fn).parameters
    for name, value in deployment["parameters"].items():
        if name in SITE_VALUES:
            continue
        assert value == params[name].default, name
        assert type(value) is type(params[name].default), name  # 3600.0, not 3600 or "3600"


def test_flow_parameters_are_the_migrate_options_with_their_defaults() -> None:
    _config, _deployment_, flow = _deployment()
    params = inspect.signature(flow.fn).parameters
    fields = {f.name: f for f in dataclasses.fields(MigrateOptions)}
    for name, param in params.items():
        if name in SETTINGS_PARAMS:
            assert param.default is None, name  # None: read from the worker's environment
            continue
        assert name in fields, f"flow parameter {name} is not a MigrateOptions field"
        if param.default is not inspect.Parameter.empty:
            assert param.default == fields[name].default, name
    # The one option the flow does not take: requeueing failed items is always on through Prefect.
    assert set(fields) - set(params) == {"retry_failed"}


def test_the_cli_defaults_are_the_options_defaults() -> None:
    from flows import cli, migrate

    assert cli.DEFAULT_LEDGER == migrate.DEFAULT_LEDGER == MigrateOptions.ledger
    assert cli.DEFAULT_WAIT_TIMEOUT == migrate.DEFAULT_WAIT_TIMEOUT == MigrateOptions.wait_timeout

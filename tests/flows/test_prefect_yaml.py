"""prefect.yaml names a real flow; its parameters are the flow's, and those are the declared options."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from pathlib import Path
from typing import Any

import yaml

from flows.options import ENTRY_DECLARATIONS, MIB, MigrateOptions, ServiceOptions, entry_fields, from_params

ROOT = Path(__file__).resolve().parents[2]

#: Parameters whose value in prefect.yaml is an example of a site's own (paths, the inventory).
SITE_VALUES = {"inventory", "ledger", "report_dir"}
#: Flow parameters that are connection settings (ServiceOptions), not MigrateOptions (the token is never one).
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


def test_flow_parameters_are_the_declared_options() -> None:
    _config, _deployment_, flow = _deployment()
    params = inspect.signature(flow.fn).parameters
    hints = typing.get_type_hints(flow.fn)
    declared = {name: hint for d in ENTRY_DECLARATIONS for name, hint in typing.get_type_hints(d).items()}
    # The flow's signature is written out (Prefect and `prefect deploy` read it); it is the declaration's.
    assert list(params) == [f.name for f in entry_fields()]
    for spec in entry_fields():
        param = params[spec.name]
        default = inspect.Parameter.empty if spec.default is dataclasses.MISSING else spec.default
        assert param.default == default, spec.name
        assert type(param.default) is type(default), spec.name
        assert hints[spec.name] == declared[spec.name], spec.name
    for name in SETTINGS_PARAMS:
        assert params[name].default is None, name  # None: read from the worker's environment
    # The one option the flow does not take: requeueing failed items is always on through Prefect.
    assert {f.name for f in dataclasses.fields(MigrateOptions)} - set(params) == {"retry_failed"}


def test_flow_parameters_give_back_the_options() -> None:
    opts = MigrateOptions(
        inventory="inv.csv", transfers=7, chunk_size=MIB, wait_timeout=None, retry_errors=True
    )
    again, service = from_params({**opts.params(), "api_url": "http://x"})
    assert again == opts and service == ServiceOptions(api_url="http://x")
    assert from_params({"inventory": "i", "wait_timeout": 0})[0].wait_timeout is None  # 0: no bound

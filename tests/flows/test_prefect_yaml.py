"""prefect.yaml names a real flow, and its parameters are exactly the flow's parameters."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_deployment_matches_the_flow() -> None:
    config = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = config["deployments"]
    path, name = deployment["entrypoint"].split(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    flow = getattr(module, name)
    assert flow.name == "videoferry-migrate"
    params = set(inspect.signature(flow.fn).parameters)
    assert set(deployment["parameters"]) == params
    assert "token" not in str(config).lower().replace("videoferry_token", "")

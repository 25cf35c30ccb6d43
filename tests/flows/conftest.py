"""Fixtures of the flow tests."""

from tests.flows.apply_fixtures import library  # noqa: F401 - a fixture, found by pytest here
from tests.flows.deploy_fixtures import prefect_server  # noqa: F401 - a fixture, found by pytest here

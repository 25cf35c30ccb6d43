"""Fixtures of the flow tests."""

from tests.flows.apply_fixtures import library  # noqa: F401 - a fixture, found by pytest here

"""Fixtures of the connector tests."""

from tests.flows.frozen_s3 import frozen_s3  # noqa: F401 - a fixture, found by pytest here

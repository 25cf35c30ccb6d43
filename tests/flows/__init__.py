"""Tests of the Prefect flows and the command line."""

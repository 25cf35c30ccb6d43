"""Prefect flows (orchestration only) and the videoferry command line."""

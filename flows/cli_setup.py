"""The `videoferry` commands of the setup job (registered on flows.cli.app when flows.cli is imported)."""

from __future__ import annotations

from flows.cli import app as app  # the one command line; commands are added with @app.command()

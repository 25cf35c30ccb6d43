"""The command line answers --help without importing Prefect."""

from __future__ import annotations

import subprocess
import sys


def test_help_does_not_import_prefect() -> None:
    code = "import sys; from flows.cli import app; import typer.testing as t; " \
        "r = t.CliRunner().invoke(app, ['--help']); print(r.exit_code); print('prefect' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "False"]

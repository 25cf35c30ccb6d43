"""The command line answers --help without importing Prefect."""

from __future__ import annotations

import subprocess
import sys

_PROBE = (
    "import sys\n"
    "from typer.testing import CliRunner\n"
    "from flows.cli import app\n"
    "r = CliRunner().invoke(app, ['--help'])\n"
    "print(r.exit_code, 'prefect' in sys.modules)\n"
)


def test_help_does_not_import_prefect() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["0", "False"]

"""The documentation's backup page (docs/jobs/backup.md) as a new user runs it: a backup to S3, then the
restore into a second emulator workspace and its check, each command copied from that page and run by bash."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import boto3

from tests.flows.backup_fixtures import make_library
from tests.flows.helpers import cli_env
from videoferry.emulator.control import EmulatorControl, Workspace

README = Path(__file__).resolve().parents[2] / "docs" / "jobs" / "backup.md"
#: The sentence the second-workspace recipe follows in the backup section.
LEAD = "To try a restore into another workspace with the emulator"


def _block_after(text: str, lead: str) -> list[str]:
    """The indented code block (4 spaces) that follows the paragraph starting with lead."""
    start = text.index(lead)
    lines = text[start:].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("    "))
    block = []
    for line in lines[first:]:
        if not line.startswith("    "):
            break
        block.append(line[4:])
    return block


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """script run by bash, `videoferry` being this checkout's command and `python` this interpreter."""
    prelude = f'videoferry() {{ "{sys.executable}" -m videoferry.flows.cli "$@"; }}\n'
    env = {**env, "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", prelude + script],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_readme_restores_a_backup_into_a_second_workspace_and_checks_it(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, s3_server: str, clip_factory
) -> None:
    text = README.read_text(encoding="utf-8")
    assert LEAD in text, "the backup page says how to make a second workspace"
    recipe = _block_after(text, LEAD)
    assert any("/_emulator/workspaces" in line for line in recipe)
    example = _block_after(text, "The restore, into another project")
    backup_line = next(line for line in example if "videoferry backup" in line)
    bucket = re.search(r"s3://([^/]+)/", backup_line)
    assert bucket is not None
    make_library(tmp_path, emu_control, emu, clip_factory, n=2)
    boto3.client("s3").create_bucket(Bucket=bucket.group(1))
    env = cli_env(emu, PROJECT=emu.project_id)
    backed_up = _bash(backup_line, env, tmp_path)
    assert backed_up.returncode == 0, backed_up.stdout + backed_up.stderr
    done = _bash("\n".join(recipe), env, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    marks = [line[:2] for line in done.stdout.splitlines() if line[:2] in ("= ", "* ", "- ", "+ ", "! ")]
    assert marks == ["= "] * 2  # the check: both restored videos the same as their backup
    assert emu.token not in done.stdout + done.stderr

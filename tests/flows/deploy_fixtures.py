"""The prefect command and prefect.yaml's deployments, for the deploy tests (server: fixtures/prefect.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.fixtures.prefect import PREFECT

ROOT = Path(__file__).resolve().parents[2]
POOL = "videoferry"


def _prefect(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [PREFECT, "--no-prompt", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"prefect {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


def _declared() -> dict[str, dict[str, Any]]:
    """The deployments prefect.yaml declares, by name."""
    document = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    return {d["name"]: d for d in document["deployments"]}

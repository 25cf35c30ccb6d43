"""Shell completion of the `videoferry` command for bash, zsh and fish (typer's), asked as each shell asks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

#: How each shell's completion script asks the command (the environment typer's scripts set).
ASKS = {
    "bash": {
        "_VIDEOFERRY_COMPLETE": "complete_bash",
        "COMP_WORDS": "videoferry migrate --led",
        "COMP_CWORD": "2",
    },
    "zsh": {"_VIDEOFERRY_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "videoferry migrate --led"},
    "fish": {
        "_VIDEOFERRY_COMPLETE": "complete_fish",
        "_TYPER_COMPLETE_ARGS": "videoferry migrate --led",
        "_TYPER_COMPLETE_FISH_ACTION": "get-args",
    },
}


#: `videoferry ARGS...` from this checkout, named as the console script is (the name the shells complete).
SCRIPT = "import sys; sys.argv[0] = 'videoferry'; from videoferry.flows.cli import main; main()"


def _videoferry(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", SCRIPT, *args]
    return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("shell", sorted(ASKS))
def test_an_option_completes_in_every_shell(shell: str) -> None:
    done = _videoferry(**ASKS[shell])
    assert done.returncode == 0, done.stderr
    assert "--ledger" in done.stdout


@pytest.mark.parametrize("shell", sorted(ASKS))
def test_the_completion_script_is_shown(shell: str) -> None:
    done = _videoferry("--show-completion", shell, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert done.returncode == 0, done.stderr
    assert "_VIDEOFERRY_COMPLETE" in done.stdout

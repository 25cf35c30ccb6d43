"""The setup options, declared once: the commands (plan, up, drift), the runners, the flows follow them."""

from __future__ import annotations

from dataclasses import dataclass, field

from videoferry.flows.options import Cli, about, ledger_option

#: Where `setup up` writes the links, stream keys and codes when --outputs does not say (it says so).
DEFAULT_OUTPUTS = "setup-outputs"
#: The options each setup command (and its flow) takes.
PLAN_FIELDS = ("file", "ledger", "prune", "show_unchanged")
UP_FIELDS = ("file", "ledger", "prune", "outputs")
DRIFT_FIELDS = ("file", "ledger", "prune")


@dataclass(frozen=True)
class SetupOptions:
    """What one setup command is asked to do (the command line's options and the flows' parameters)."""

    file: str = field(
        metadata=about(
            "The desired-state file (YAML; videoferry/tasks/setup/README.md).",
            Cli(argument=True, metavar="FILE"),
        )
    )
    ledger: str = ledger_option(
        "The ledger: every write of `setup up` is recorded in it (what setup created, posters set)."
    )
    prune: bool = field(
        default=False,
        metadata=about(
            "What the file no longer declares: deleted (up), shown as deletes (plan), counted as drift."
        ),
    )
    outputs: str = field(
        default=DEFAULT_OUTPUTS,
        metadata=about(
            "Where `up` writes play links, stream keys and codes: a directory (files 0600) or"
            " s3://bucket/prefix/.",
            Cli(metavar="DIR|s3://BUCKET/PREFIX/"),
        ),
    )
    show_unchanged: bool = field(default=False, metadata=about("List unchanged objects too.", flow=False))


@dataclass(frozen=True)
class DrmCheckOptions:
    """What `setup drm-check` is asked: whose DRM callback, and which video to ask about."""

    ledger: str = ledger_option("The ledger: its rate limiter's store is kept beside it.")
    project_id: str | None = field(
        default=None,
        metadata=about(
            "Check this project's callback (default: the workspace's).", Cli(metavar="ID"), flow=False
        ),
    )
    video_id: str | None = field(
        default=None,
        metadata=about(
            "A video to ask the service's license simulation about.", Cli(metavar="ID"), flow=False
        ),
    )

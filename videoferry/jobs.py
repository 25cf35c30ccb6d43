"""A typed function per job: the command line's options (the same declarations) in, its outcome out."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from flows.apply.options import ApplyOptions
from flows.archive.options import ArchiveOptions
from flows.backup.options import BackupOptions
from flows.check.options import CheckOptions
from flows.links.options import LinksOptions
from flows.migrate.options import MigrateOptions
from flows.options import ServiceOptions, options_from_params
from flows.setup.options import SetupOptions
from videoferry.errors import ConfigurationError, raised

if TYPE_CHECKING:
    from flows.apply.runner import ApplyOutcome
    from flows.check.runner import CheckOutcome
    from flows.job import CopyOutcome, Job
    from flows.links.runner import LinksOutcome
    from flows.migrate.runner import MigrateOutcome
    from flows.setup.runner import SetupOutcome

__all__ = ["apply", "archive", "backup", "check", "links", "migrate", "setup"]

OptionsT = TypeVar("OptionsT")


def migrate(
    inventory: str | MigrateOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> MigrateOutcome:
    """`videoferry migrate`: every item of an inventory into the service, exactly once (rerun to resume).

    inventory: its path or s3:// URL, or a whole MigrateOptions; options: MigrateOptions' fields
    (flows/migrate/options.py: parent_id, ledger, transfers, report_dir, dry_run...; sizes in bytes,
    seconds as floats). dry_run=True returns the preview (outcome.preview) and calls nothing that writes.
    """
    from flows.migrate import MIGRATE

    opts, service = _options(MigrateOptions, "inventory", inventory, options, api_url, upload_url)
    if opts.dry_run:
        from flows.migrate.preview import preview_migration

        with raised():
            return preview_migration(opts, service=service)
    return _run(MIGRATE, opts, service, prefect)  # type: ignore[no-any-return]


def apply(
    ops: str | ApplyOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> ApplyOutcome:
    """`videoferry apply`: an operations file (path or s3://), each operation exactly once; options:
    ApplyOptions' fields (flows/apply/options.py)."""
    from flows.apply import APPLY

    opts, service = _options(ApplyOptions, "ops", ops, options, api_url, upload_url)
    return _run(APPLY, opts, service, prefect)  # type: ignore[no-any-return]


def archive(
    to: str | ArchiveOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> CopyOutcome:
    """`videoferry archive`: the recordings of finished live events to `to` (s3:// or a directory), then
    tidied; options: ArchiveOptions' fields (flows/archive/options.py)."""
    from flows.archive import ARCHIVE

    opts, service = _options(ArchiveOptions, "to", to, options, api_url, upload_url)
    return _run(ARCHIVE, opts, service, prefect)  # type: ignore[no-any-return]


def backup(
    project: str | BackupOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> CopyOutcome:
    """`videoferry backup`: every video of a project to `to=` (s3:// or a directory), only what is new or
    changed; options: BackupOptions' fields (flows/backup/options.py; `to` is required)."""
    from flows.backup import BACKUP

    opts, service = _options(BackupOptions, "project", project, options, api_url, upload_url)
    return _run(BACKUP, opts, service, prefect)  # type: ignore[no-any-return]


def check(
    inventory: str | CheckOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> CheckOutcome:
    """`videoferry check`: the library against an inventory and its ledger (reads the service; adopt=True
    writes the ledger); options: CheckOptions' fields (flows/check/options.py). Through its flow (inside a
    flow run, a subflow) its findings, the videos that do not play first, are Prefect artifacts."""
    from flows.check import CHECK

    opts, service = _options(CheckOptions, "inventory", inventory, options, api_url, upload_url)
    return _run(CHECK, opts, service, prefect)  # type: ignore[no-any-return]


def setup(
    file: str | SetupOptions,
    /,
    action: Literal["plan", "up", "drift"] = "plan",
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> SetupOutcome:
    """`videoferry setup plan|up|drift`: the service against a desired-state file (plan: no write; up: make
    it match, each write exactly once; drift: exit_code 1 when it differs); options: SetupOptions' fields."""
    from flows.setup import SETUP_DRIFT, SETUP_PLAN, SETUP_UP

    jobs = {"plan": SETUP_PLAN, "up": SETUP_UP, "drift": SETUP_DRIFT}
    if action not in jobs:
        raise ConfigurationError(f"setup action {action!r}: expected plan, up or drift")
    opts, service = _options(SetupOptions, "file", file, options, api_url, upload_url)
    return _run(jobs[action], opts, service, prefect)  # type: ignore[no-any-return]


def links(*, api_url: str | None = None, upload_url: str | None = None, **options: Any) -> LinksOutcome:
    """`videoferry links`: every migrated item's old and new links, from the ledger; options: LinksOptions'
    fields (flows/links/options.py: ledger, format, out). No flow: runs plainly."""
    from flows.links import LINKS

    opts, service = _options(LinksOptions, None, None, options, api_url, upload_url)
    return _run(LINKS, opts, service, False)  # type: ignore[no-any-return]


def _options(
    declaration: type[OptionsT],
    first: str | None,
    given: Any,
    options: dict[str, Any],
    api_url: str | None,
    upload_url: str | None,
) -> tuple[OptionsT, ServiceOptions]:
    """The job's options from the call: a whole declaration, or its first field and the others by name,
    checked as a flow's parameters are (bounds, the options' own checks); ConfigurationError naming an
    unknown or missing option."""
    names = {f.name for f in dataclasses.fields(declaration)}  # type: ignore[arg-type]
    unknown = sorted(set(options) - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise ConfigurationError(
            f"{declaration.__name__} has no option {', '.join(unknown)} (its options: {known})"
        )
    if isinstance(given, declaration):
        values = {**dataclasses.asdict(given), **options}  # type: ignore[call-overload]
    else:
        values = {first: given, **options} if first is not None else dict(options)
    missing = [
        f.name
        for f in dataclasses.fields(declaration)  # type: ignore[arg-type]
        if f.name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigurationError(f"{declaration.__name__}: {', '.join(missing)} is required")
    with raised():
        return options_from_params(declaration, {**values, "api_url": api_url, "upload_url": upload_url})


def _run(job: Job, opts: Any, service: ServiceOptions, prefect: bool | None) -> Any:
    """Run the job (flows/running.run_job_as): through its flow when `prefect` says, or by default inside a
    flow run (a subflow) or with a Prefect server configured; else plainly."""
    from flows.running import run_job_as, use_prefect
    from tasks.preflight import check_reachable
    from tasks.service import service_settings

    with raised():
        settings = service_settings(api_url=service.api_url, upload_url=service.upload_url)
        check_reachable(settings)
        return run_job_as(job, opts, settings, prefect=use_prefect(prefect))

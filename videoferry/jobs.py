"""A typed function per job: the command line's options (the same declarations) in, its outcome out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from flows.apply.options import ApplyOptions
from flows.archive.options import ArchiveOptions
from flows.backup.options import BackupOptions
from flows.check.options import CheckOptions
from flows.links.options import EmbedsOptions, LinksOptions
from flows.migrate.options import MigrateOptions
from flows.options import ServiceOptions, options_from_params
from flows.setup.options import DrmCheckOptions, SetupOptions
from videoferry.errors import ConfigurationError, raised

if TYPE_CHECKING:
    from connectors.config import Settings
    from flows.apply.runner import ApplyOutcome
    from flows.check.runner import CheckOutcome
    from flows.job import CopyOutcome, Job
    from flows.links.runner import LinksOutcome, RewriteOutcome
    from flows.migrate.runner import MigrateOutcome
    from flows.setup.runner import SetupOutcome
    from tasks.setup.drm import DrmCheck

__all__ = [
    "Announce",
    "Preview",
    "apply",
    "archive",
    "backup",
    "check",
    "drm_check",
    "links",
    "migrate",
    "rewrite_embeds",
    "setup",
]

OptionsT = TypeVar("OptionsT")
#: Told, before a flow run of its own starts, the line saying where its page is (never for a subflow).
Announce = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Preview:
    """What a dry run of apply, archive or backup would do (dry_run=True): one line per operation,
    recording or video, as `--dry-run` prints them; nothing was written. exit_code: what the command would
    exit with (apply: 1 when a row is refused as an error; else 0)."""

    lines: list[str]
    exit_code: int = 0


def migrate(
    inventory: str | MigrateOptions,
    /,
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Announce | None = None,
    **options: Any,
) -> MigrateOutcome:
    """`videoferry migrate`: every item of an inventory into the service, exactly once (rerun to resume).

    inventory: its path or s3:// URL, or a whole MigrateOptions; options: MigrateOptions' fields
    (flows/migrate/options.py: parent_id, ledger, transfers, report_dir, dry_run...; sizes in bytes,
    seconds as floats). dry_run=True returns the preview (outcome.preview) and calls nothing that writes.
    announce: told where a flow run of its own is, before it starts.
    """
    from flows.migrate import MIGRATE

    opts, service = _options(MigrateOptions, "inventory", inventory, options, api_url, upload_url)
    if opts.dry_run:
        from flows.migrate.preview import preview_migration

        with raised():
            return preview_migration(opts, service=service)
    return _run(MIGRATE, opts, service, prefect, announce)  # type: ignore[no-any-return]


@overload
def apply(ops: str | ApplyOptions, /, *, dry_run: Literal[True], **options: Any) -> Preview: ...
@overload
def apply(ops: str, /, *, dry_run: Literal[False] = ..., **options: Any) -> ApplyOutcome: ...
@overload
def apply(ops: ApplyOptions, /, *, dry_run: bool = ..., **options: Any) -> ApplyOutcome | Preview: ...
def apply(
    ops: str | ApplyOptions,
    /,
    *,
    dry_run: bool = False,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Announce | None = None,
    **options: Any,
) -> ApplyOutcome | Preview:
    """`videoferry apply`: an operations file (path or s3://), each operation exactly once; options:
    ApplyOptions' fields (flows/apply/options.py). dry_run=True (or an ApplyOptions with dry_run) returns a
    Preview: what each row would do to which video (GET calls only; no write, no ledger run)."""
    from flows.apply import APPLY

    opts, service = _options(ApplyOptions, "ops", ops, _dry(options, dry_run), api_url, upload_url)
    if opts.dry_run:
        from flows.apply.runner import preview_apply

        with raised():
            plan = preview_apply(opts, _settings(service))
        return Preview(plan.lines(allow_delete=opts.allow_delete), plan.exit_code)
    return _run(APPLY, opts, service, prefect, announce)  # type: ignore[no-any-return]


@overload
def archive(to: str | ArchiveOptions, /, *, dry_run: Literal[True], **options: Any) -> Preview: ...
@overload
def archive(to: str, /, *, dry_run: Literal[False] = ..., **options: Any) -> CopyOutcome: ...
@overload
def archive(to: ArchiveOptions, /, *, dry_run: bool = ..., **options: Any) -> CopyOutcome | Preview: ...
def archive(
    to: str | ArchiveOptions,
    /,
    *,
    dry_run: bool = False,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Announce | None = None,
    **options: Any,
) -> CopyOutcome | Preview:
    """`videoferry archive`: the recordings of finished live events to `to` (s3:// or a directory), then
    tidied; options: ArchiveOptions' fields (flows/archive/options.py). dry_run=True returns a Preview: one
    line per recording saying what a run would do; nothing written."""
    from flows.archive import ARCHIVE

    opts, service = _options(ArchiveOptions, "to", to, _dry(options, dry_run), api_url, upload_url)
    if opts.dry_run:
        from flows.archive.runner import preview_archive

        with raised():
            return Preview(preview_archive(opts, _settings(service)))
    return _run(ARCHIVE, opts, service, prefect, announce)  # type: ignore[no-any-return]


@overload
def backup(project: str | BackupOptions, /, *, dry_run: Literal[True], **options: Any) -> Preview: ...
@overload
def backup(project: str, /, *, dry_run: Literal[False] = ..., **options: Any) -> CopyOutcome: ...
@overload
def backup(project: BackupOptions, /, *, dry_run: bool = ..., **options: Any) -> CopyOutcome | Preview: ...
def backup(
    project: str | BackupOptions,
    /,
    *,
    dry_run: bool = False,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Announce | None = None,
    **options: Any,
) -> CopyOutcome | Preview:
    """`videoferry backup`: every video of a project to `to=` (s3:// or a directory), only what is new or
    changed; options: BackupOptions' fields (flows/backup/options.py; `to` is required). dry_run=True
    returns a Preview: one line per video saying what a run would do (the list read, nothing written)."""
    from flows.backup import BACKUP

    opts, service = _options(BackupOptions, "project", project, _dry(options, dry_run), api_url, upload_url)
    if opts.dry_run:
        from flows.backup.runner import preview_backup

        with raised():
            return Preview(preview_backup(opts, _settings(service)))
    return _run(BACKUP, opts, service, prefect, announce)  # type: ignore[no-any-return]


def check(
    inventory: str | CheckOptions,
    /,
    *,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> CheckOutcome:
    """`videoferry check`: the library against an inventory and its ledger (reads the service; adopt=True
    writes the ledger); options: CheckOptions' fields (flows/check/options.py). No flow: runs plainly."""
    from flows.check import CHECK

    opts, service = _options(CheckOptions, "inventory", inventory, options, api_url, upload_url)
    return _run(CHECK, opts, service, False, None)  # type: ignore[no-any-return]


def setup(
    file: str | SetupOptions,
    /,
    action: Literal["plan", "up", "drift"] = "plan",
    *,
    prefect: bool | None = None,
    api_url: str | None = None,
    upload_url: str | None = None,
    announce: Announce | None = None,
    **options: Any,
) -> SetupOutcome:
    """`videoferry setup plan|up|drift`: the service against a desired-state file (plan: no write; up: make
    it match, each write exactly once; drift: exit_code 1 when it differs); options: SetupOptions' fields."""
    from flows.setup import SETUP_DRIFT, SETUP_PLAN, SETUP_UP

    jobs = {"plan": SETUP_PLAN, "up": SETUP_UP, "drift": SETUP_DRIFT}
    if action not in jobs:
        raise ConfigurationError(f"setup action {action!r}: expected plan, up or drift")
    opts, service = _options(SetupOptions, "file", file, options, api_url, upload_url)
    return _run(jobs[action], opts, service, prefect, announce)  # type: ignore[no-any-return]


def drm_check(
    given: DrmCheckOptions | None = None,
    /,
    *,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> DrmCheck:
    """`videoferry setup drm-check`: the license decision (spec 3.3) the DRM callback gives now (its
    `decision`: issued, not blocked or denied; `line()` says it); options: DrmCheckOptions' fields (ledger,
    project_id, video_id). ConfigurationError when no DRM callback is configured."""
    from tasks.service import run_client
    from tasks.setup.drm import check_drm

    opts, service = _options(DrmCheckOptions, None, given, options, api_url, upload_url)
    with raised(), run_client(_settings(service), opts.ledger) as client:
        found = check_drm(client, project_id=opts.project_id, video_id=opts.video_id)
    if found is None:
        raise ConfigurationError("no DRM callback is configured")
    return found


def links(
    given: LinksOptions | None = None,
    /,
    *,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> LinksOutcome:
    """`videoferry links`: every migrated item's old and new links, from the ledger; options: LinksOptions'
    fields (flows/links/options.py: ledger, format, out), or a whole LinksOptions. No flow: runs plainly."""
    from flows.links import LINKS

    opts, service = _options(LinksOptions, None, given, options, api_url, upload_url)
    return _run(LINKS, opts, service, False, None)  # type: ignore[no-any-return]


def rewrite_embeds(
    paths: list[str] | EmbedsOptions,
    /,
    *,
    api_url: str | None = None,
    upload_url: str | None = None,
    **options: Any,
) -> RewriteOutcome:
    """`videoferry rewrite-embeds`: every embed or link of a migrated video in these HTML, Markdown or text
    files (folders walked) replaced by its new player link; options: EmbedsOptions' fields (ledger,
    dry_run: each file's unified diff in outcome.files, nothing written). No flow: runs plainly."""
    from flows.links import EMBEDS

    opts, service = _options(EmbedsOptions, "paths", paths, options, api_url, upload_url)
    return _run(EMBEDS, opts, service, False, None)  # type: ignore[no-any-return]


def _dry(options: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """The options with dry_run=True when the call says so (a whole declaration's own dry_run stays)."""
    return {**options, "dry_run": True} if dry_run else options


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
    declared = dataclasses.fields(declaration)  # type: ignore[arg-type]
    names = {f.name for f in declared}
    unknown = sorted(set(options) - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise ConfigurationError(
            f"{declaration.__name__} has no option {', '.join(unknown)} (its options: {known})"
        )
    if isinstance(given, declaration):
        values = {**{f.name: getattr(given, f.name) for f in declared}, **options}
    elif first is not None:
        values = {first: given, **options}
    else:
        values = dict(options)
    missing = [
        f.name
        for f in declared
        if f.name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigurationError(f"{declaration.__name__}: {', '.join(missing)} is required")
    with raised():
        return options_from_params(declaration, {**values, "api_url": api_url, "upload_url": upload_url})


def _settings(service: ServiceOptions) -> Settings:
    """The service's settings (the environment or a credentials block, the call's addresses first), both
    addresses checked to answer (ConfigError naming what to fix)."""
    from tasks.preflight import check_reachable
    from tasks.service import service_settings

    settings = service_settings(api_url=service.api_url, upload_url=service.upload_url)
    check_reachable(settings)
    return settings


def _run(
    job: Job, opts: Any, service: ServiceOptions, prefect: bool | None, announce: Announce | None
) -> Any:
    """Run the job (flows/running.run_job_as): through its flow when `prefect` says, or by default inside a
    flow run (a subflow) or with a Prefect server configured; else plainly."""
    from flows.running import run_job_as, use_prefect

    with raised():
        settings = _settings(service)
        return run_job_as(job, opts, settings, prefect=use_prefect(prefect), announce=announce)

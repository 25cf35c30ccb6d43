"""`migrate --dry-run`: per item what the real run would do, sources checked, whether it could succeed.

No API call and no write anywhere: the inventory is read, the ledger compared (tasks/migrate/plan.preview),
each source that still has to be read is checked (a file's size, an S3 object's HEAD, a URL's HEAD:
connectors/source_check.py) and, given the service's settings, its two addresses are asked whether they
answer at all (no token sent). The exit status says whether the real run could succeed: 0 yes, 1 some row
would fail (a rejected row, a missing or unreadable source), 2 configuration to fix first.
"""

from __future__ import annotations

from collections import Counter

from connectors.config import ConfigError
from connectors.s3 import S3Config
from flows.job import Exit, read_ledger
from flows.migrate.inventory import read_migration_plan
from flows.migrate.options import MigrateOptions
from flows.migrate.outcome import MigrateOutcome
from flows.options import ServiceOptions
from tasks.migrate.plan import VERBS, preview
from tasks.migrate.source_preview import source_lines

__all__ = ["preview_migration"]


def preview_migration(
    opts: MigrateOptions, s3: S3Config | None = None, *, service: ServiceOptions | None = None
) -> MigrateOutcome:
    """The dry run's outcome: one line per item (its verb, its source, why), the inventory's warnings and
    rejected rows, then a summary; `service` given (the command line), the settings are checked too."""
    s3 = s3 or S3Config.from_env()
    plan = read_migration_plan(opts, s3)
    with read_ledger(opts.ledger) as ledger:
        steps = preview(plan, ledger, s3=s3, retry_errors=opts.retry_errors)
    rejected = plan.rejected_rows
    lines = [f"warning: {w}" for w in plan.inventory.warnings]
    lines += [step.line() for step in steps]
    lines += source_lines(plan, steps)
    lines += [f"rejected row {r['row']}, field {r['field']}: {r['reason']}" for r in rejected]
    counts = Counter(step.verb for step in steps)
    problems = sum(1 for step in steps if step.problem)
    code = Exit.INCOMPLETE if problems or rejected else Exit.DONE
    configuration = _configuration(service) if service is not None else None
    if configuration is not None:
        code = Exit.CONFIG
    shown = ", ".join(f"{counts[verb]} {verb}" for verb in VERBS if counts[verb]) or "nothing to do"
    lines.append(f"dry run: {shown}; {len(rejected)} rows rejected")
    if configuration is not None:
        lines.append(f"the real run would stop at once: {configuration}")
    elif code != Exit.DONE:
        lines.append("the real run would not finish every item: fix the rows above, or expect them failed")
    return MigrateOutcome(
        exit_code=code, reasons=lines, rejected=rejected, preview={verb: counts[verb] for verb in VERBS}
    )


def _configuration(service: ServiceOptions) -> str | None:
    """What the real run would stop on before any item (variables, an address that does not answer)."""
    from connectors.config import Settings
    from tasks.preflight import check_reachable

    try:
        check_reachable(Settings.from_env(api_url=service.api_url, upload_url=service.upload_url))
    except ConfigError as exc:
        return str(exc)
    return None

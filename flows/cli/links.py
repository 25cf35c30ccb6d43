"""`videoferry links` and `videoferry rewrite-embeds`: after the move (options: flows/links/options.py)."""

from __future__ import annotations

import typer

from flows.cli.app import add_command, job_command, run_command, say
from flows.links.options import EmbedsOptions, LinksOptions
from flows.options import ServiceOptions
from videoferry import jobs


def _links(opts: LinksOptions, service: ServiceOptions, prefect: bool) -> None:
    """Write which new video replaced which old one: source (URL, platform:id, path, or video:ID for what
    apply's copy, concat and cut made), source page and embed URLs where known, video id, play_link,
    embed_link, title. nginx and apache write redirect maps those servers load as they are.

    Reads the ledger and lists the destination once (no write, no Prefect). Items not done are left out
    and counted on stderr. Exit status 0 when everything is in the map, 1 when something was left out, 2 for
    configuration to fix.
    """
    outcome = run_command(jobs.links, opts, service)
    if outcome.text:
        typer.echo(outcome.text, nl=False)
    for line in [*outcome.reasons, *outcome.left_out]:
        typer.echo(line, err=True)
    if outcome.skipped:
        typer.echo(f"left out of the redirect map: {outcome.skipped} address(es)", err=True)
    typer.echo(f"links: {outcome.rows} video(s)", err=True)
    for path in outcome.report_files:
        typer.echo(f"wrote {path}", err=True)
    raise typer.Exit(outcome.exit_code)


def _rewrite(opts: EmbedsOptions, service: ServiceOptions, prefect: bool) -> None:
    """Replace, in HTML, Markdown and text files (folders walked), every embed or link of a migrated
    video with its new player link: the embed link in an iframe, embed or object tag and for a platform's
    player URL, the play link for a page or a migrated file's URL.

    A URL that cannot be mapped is left as it is and listed (file:line: url: why). --dry-run prints a
    unified diff and the counts. Each file is written atomically in its own encoding and line endings; a
    second run changes nothing. Exit status 0 when every file could be read and written, 1 otherwise.
    """
    outcome = run_command(jobs.rewrite_embeds, opts, service)
    for line in outcome.reasons:
        typer.echo(line, err=True)
    changed = replaced = left = 0
    for result in outcome.files:
        if opts.dry_run and result.diff:
            typer.echo(result.diff, nl=False)
        for unmapped in result.unmapped:
            typer.echo(f"{result.path}:{unmapped.line}: {unmapped.url}: {unmapped.reason}", err=True)
        if result.error:
            typer.echo(f"error: {result.path}: {result.error}", err=True)
        changed += bool(result.diff) and not result.error
        replaced += result.replaced
        left += len(result.unmapped)
    would = "would be " if opts.dry_run else ""
    say(
        f"{len(outcome.files)} file(s), {changed} {would}changed; {replaced} URL(s) {would}replaced,"
        f" {left} left as they were; {sum(bool(r.error) for r in outcome.files)} failed"
    )
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    """Add `links` and `rewrite-embeds` to the app."""
    add_command(app, "links", job_command(LinksOptions, _links))
    add_command(app, "rewrite-embeds", job_command(EmbedsOptions, _rewrite))

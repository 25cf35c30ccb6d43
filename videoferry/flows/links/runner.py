"""The runners of `links` and `rewrite-embeds`: read the ledger (no run, no lock, no Prefect), list the
destination once for the player links (read only), then write the map or rewrite the files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from videoferry.connectors.config import ConfigError, Settings
from videoferry.connectors.errors import AuthError, VideoApiError
from videoferry.flows.job import Outcome, read_ledger
from videoferry.flows.links.options import EmbedsOptions, LinksOptions
from videoferry.state.errors import LedgerError
from videoferry.tasks.links.files import FileResult, rewrite_file, text_files, write_atomically
from videoferry.tasks.links.formats import render
from videoferry.tasks.links.rewrite import EmbedMap
from videoferry.tasks.links.table import LinksMap, build_links
from videoferry.tasks.service import run_client
from videoferry.tasks.stop import ServiceUnavailable


@dataclass
class LinksOutcome(Outcome):
    """How `links` ended: the map's text (when it goes to standard output), how many rows, what was left
    out (one line per reason) and the redirect addresses a map could not hold."""

    text: str = ""
    rows: int = 0
    left_out: list[str] = field(default_factory=list)
    skipped: int = 0


@dataclass
class RewriteOutcome(Outcome):
    """How `rewrite-embeds` ended: per file what was done, and the size of the map it used."""

    files: list[FileResult] = field(default_factory=list)
    mapped: int = 0
    left_out: list[str] = field(default_factory=list)


def _links_map(ledger_uri: str, settings: Settings, notes: list[str]) -> LinksMap:
    """The ledger's links map; LedgerError when there is no ledger, ServiceUnavailable when the listing
    fails."""
    with read_ledger(ledger_uri, notes) as book:
        if book is None:
            raise LedgerError(f"ledger {ledger_uri} does not exist")
        try:
            with run_client(settings, ledger_uri) as client:
                return build_links(client, book)
        except AuthError:
            raise
        except VideoApiError as exc:
            raise ServiceUnavailable(f"the destination could not be listed: {exc}") from exc


def run_links(opts: LinksOptions, settings: Settings) -> LinksOutcome:
    """The links map in opts.format, to opts.out (atomically) or in the outcome's text. Exit status 0 when
    every item and every apply unit that makes a video is in it, 1 when some were left out."""
    notes: list[str] = []
    links = _links_map(opts.ledger, settings, notes)
    text, skipped = render(links.rows, opts.format)
    outcome = LinksOutcome(
        exit_code=1 if links.left_out else 0,
        reasons=notes,
        rows=len(links.rows),
        left_out=links.left_out_lines(),
        skipped=skipped,
    )
    if opts.out:
        target = Path(opts.out)
        try:
            if not target.exists():
                target.touch()
            write_atomically(target, text.encode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"--out {target}: cannot write ({exc.strerror or exc})") from exc
        outcome.report_files.append(str(target))
    else:
        outcome.text = text
    return outcome


def run_rewrite(opts: EmbedsOptions, settings: Settings) -> RewriteOutcome:
    """Rewrite (or with dry_run, diff) every file under opts.paths. Exit status 0 when every file could be
    read and written, 1 otherwise; URLs left as they were are listed, not failures."""
    notes: list[str] = []
    links = _links_map(opts.ledger, settings, notes)
    embeds = EmbedMap(links.rows)
    results = [rewrite_file(path, embeds, dry_run=opts.dry_run) for path in text_files(opts.paths)]
    return RewriteOutcome(
        exit_code=1 if any(r.error for r in results) else 0,
        reasons=notes,
        files=results,
        mapped=len(embeds),
        left_out=links.left_out_lines(),
    )

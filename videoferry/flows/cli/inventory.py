"""`videoferry inventory SOURCE --out FILE` (a platform's library as an inventory) and `videoferry standin`
(a platform's stand-in, to try it)."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import typer

from videoferry.flows.cli.app import add_command, cli_parameter, exit_on_errors, fail, say
from videoferry.flows.inventory.options import InventoryOptions
from videoferry.flows.options import cli_fields, options_from_params


def inventory(**values: Any) -> None:
    """List a library on a video platform and write it as an inventory (ids, never links).

    SOURCE is vimeo: (the whole account), vimeo:folder/ID, wistia:, wistia:project/ID, mux:, cloudflare:,
    apivideo: or bunny:LIBRARY. The token comes from VIDEOFERRY_<PLATFORM>_TOKEN (Mux: the access token as
    ID:SECRET), the address from VIDEOFERRY_<PLATFORM>_API_URL (default: the public API); Cloudflare also
    reads VIDEOFERRY_CLOUDFLARE_ACCOUNT_ID, Bunny VIDEOFERRY_BUNNY_CDN_URL (the library's pull zone). Each
    row's key is the platform's own id (vimeo:ID, bunny:LIBRARY/ID); no download link is written (they
    expire). Exit status 0 written, 1 the listing could not be finished (nothing written), 2 a token, scope,
    plan or option to fix.
    """
    from videoferry.flows.inventory.runner import run_inventory

    with exit_on_errors():
        opts, _ = options_from_params(InventoryOptions, values)
    outcome = run_inventory(opts)
    for line in outcome.lines:
        say(line)
    if outcome.error is not None:
        raise fail(outcome.error, outcome.exit_code)
    raise typer.Exit(outcome.exit_code)


def _signature() -> inspect.Signature:
    """The command's parameters, from the declaration (flows/inventory/options.py)."""
    hints = typing.get_type_hints(InventoryOptions)
    return inspect.Signature([cli_parameter(f, hints[f.name]) for f in cli_fields(InventoryOptions)])


inventory.__signature__ = _signature()  # type: ignore[attr-defined]


def standin(
    platform: str = typer.Argument(
        ..., metavar="PLATFORM", help="vimeo, wistia, mux, cloudflare, apivideo or bunny."
    ),
    host: str = typer.Option("127.0.0.1", metavar="HOST", help="Address to listen on."),
    port: int = typer.Option(0, metavar="PORT", help="Port to listen on (0: a free one)."),
) -> None:
    """Run a stand-in of a platform (Vimeo, Wistia, Mux, Cloudflare Stream, api.video, Bunny Stream) until
    interrupted; its first line is JSON with its base_url and token (set VIDEOFERRY_VIMEO_API_URL /
    VIDEOFERRY_VIMEO_TOKEN to them) and `env`, the other variables its client reads. Its control API
    (/_standin/seed, /_standin/config) seeds videos and faults: emulator/platforms/README.md."""
    from videoferry.flows.cli.tools import import_sandbox

    sandbox = import_sandbox("standin", "videoferry.emulator.platforms.server")
    PLATFORMS, serve_forever = sandbox.PLATFORMS, sandbox.serve_forever  # noqa: N806 - the module's names
    if platform not in PLATFORMS:
        raise fail(f"unknown platform {platform!r} (expected one of: {', '.join(PLATFORMS)})")
    try:
        serve_forever(platform, host, port)
    except OSError as exc:
        raise fail(
            f"port {port} on {host} cannot be used ({exc.strerror}); choose another with --port"
        ) from None


def register(app: typer.Typer) -> None:
    """Add `inventory` and `standin` to the app."""
    add_command(app, "inventory", inventory)
    add_command(app, "standin", standin)

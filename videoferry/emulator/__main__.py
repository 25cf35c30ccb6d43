"""`python -m videoferry.emulator [--host H] [--port P] [--upload-port Q] [--variant V]...`: the emulator."""

from __future__ import annotations

import argparse

from videoferry.emulator.server import serve_forever
from videoferry.emulator.variants import make_variants


def main() -> None:
    """Parse the options and serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m videoferry.emulator", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--upload-port", type=int, default=8081)
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="a variant (videoferry/emulator/README.md)",
    )
    args = parser.parse_args()
    try:
        make_variants(args.variant)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        serve_forever(args.host, args.port, args.upload_port, args.variant)
    except ValueError as exc:  # a port that cannot be listened on: one line, exit 2
        parser.exit(2, f"{parser.prog}: {exc}\n")


if __name__ == "__main__":
    main()

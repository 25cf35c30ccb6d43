"""The videoferry command line: runs flows, the emulator and the ledger-only commands."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="videoferry",
    help="Move whole video libraries into the video service and run batch jobs on them.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def emulator(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8080, help="Port of the API host ({base_url})."),
    upload_port: int = typer.Option(8081, help="Port of the upload host ({upload_url})."),
) -> None:
    """Run the local emulator of the video service until interrupted."""
    from emulator.server import serve_forever

    serve_forever(host=host, port=port, upload_port=upload_port)


def main() -> None:
    """Entry point of the `videoferry` console script."""
    app()


if __name__ == "__main__":
    main()

"""Peak RSS of a process migrating one big file by tus, from local disk and from the moto S3 server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.child import measure
from bench.figures import Figure
from bench.services import EmulatorProcess, MotoProcess
from bench.workload import MIB, BenchConfig, fit_size, write_inventory, write_random_file
from videoferry.connectors.config import DEFAULT_CHUNK_SIZE
from videoferry.emulator.control import Workspace

#: (reference size, big size) per source. moto answers every ranged GET by reading the whole object, so an
#: S3 migration costs O(size^2) inside moto: the S3 file is smaller to keep `make bench` under 10 minutes.
#: Sizes of each of the FILES files (a reference run, then the big one), moved TRANSFERS at once.
FULL = {"local": (16 * MIB, 512 * MIB), "s3": (16 * MIB, 128 * MIB)}
QUICK = {"local": (2 * MIB, 4 * MIB), "s3": (2 * MIB, 4 * MIB)}
#: The CLI's default --transfers: four uploads at once, as a user's run has them.
TRANSFERS = FILES = 4
BUCKET = "videoferry-bench"


def _env(ws: Workspace) -> dict[str, str]:
    return {
        "VIDEOFERRY_API_URL": ws.base_url,
        "VIDEOFERRY_UPLOAD_URL": ws.upload_url,
        "VIDEOFERRY_TOKEN": ws.token,
    }


def _migrate(
    ws: Workspace, sources: list[str], size: int, workdir: Path, env: dict[str, str]
) -> dict[str, Any]:
    """Migrate the sources by tus (TRANSFERS at once) in a child process, stopping once their bytes are in."""
    name = f"mem-{len(list(workdir.glob('mem-*.csv')))}"
    titles = [f"{name}-{n}" for n in range(len(sources))]
    inventory = write_inventory(workdir / f"{name}.csv", sources, titles)
    spec = {
        "job": "migrate",
        "options": {
            "inventory": str(inventory),
            "parent_id": ws.project_id,
            "ledger": str(workdir / f"{name}.db"),
            "transfers": TRANSFERS,
            "via": "tus",
            "wait_timeout": 0.0,
        },
    }
    result = measure(spec, env)
    if result["bytes_uploaded"] != size * len(sources):
        raise RuntimeError(
            f"migration of {len(sources)} x {size} bytes uploaded {result['bytes_uploaded']}: "
            f"{result['reasons']}"
        )
    return result


def _figures(kind: str, results: list[tuple[int, dict[str, Any]]]) -> Iterator[Figure]:
    (ref_size, ref), (size, big) = results
    peak, ref_peak = big["peak_rss"] / MIB, ref["peak_rss"] / MIB
    yield Figure(
        f"peak_rss_migrate_{kind}",
        peak,
        "MiB",
        f"{FILES} files of {size // MIB} MiB by tus, {TRANSFERS} at once (--transfers {TRANSFERS}, the "
        f"default), chunks from {DEFAULT_CHUNK_SIZE // MIB} MiB (streamed in 1 MiB blocks): "
        f"{big['peak_rss'] / (size * FILES):.3f} x the "
        f"bytes moved; after imports "
        f"{big['baseline_rss'] / MIB:.0f} MiB; {size * FILES / MIB / big['seconds']:.0f} MiB/s",
    )
    yield Figure(
        f"peak_rss_growth_{kind}",
        peak - ref_peak,
        "MiB",
        f"peak with {FILES} files of {size // MIB} MiB minus peak with {FILES} of {ref_size // MIB} MiB "
        f"({ref_peak:.0f} MiB); flat memory = about 0",
    )


def _local(cfg: BenchConfig, ws: Workspace, root: Path, sizes: tuple[int, int]) -> Iterator[Figure]:
    results = []
    for wanted in sizes:
        size = fit_size(cfg, wanted, copies=2 * FILES, what="local memory files", minimum=sizes[0])
        paths = [write_random_file(root / f"local-{size // MIB}-{n}.bin", size) for n in range(FILES)]
        try:
            results.append((size, _migrate(ws, [str(p) for p in paths], size, root, _env(ws))))
        finally:
            for path in paths:
                path.unlink(missing_ok=True)
    yield from _figures("local", results)


def _s3(cfg: BenchConfig, ws: Workspace, root: Path, sizes: tuple[int, int]) -> Iterator[Figure]:
    import boto3
    from boto3.s3.transfer import TransferConfig

    results = []
    with MotoProcess(root) as moto:
        s3 = boto3.session.Session().client(
            "s3",
            endpoint_url=moto.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        s3.create_bucket(Bucket=BUCKET)
        for wanted in sizes:
            size = fit_size(cfg, wanted, copies=4 * FILES, what="S3 memory objects", minimum=sizes[0])
            sources = []
            for n in range(FILES):
                path = write_random_file(root / f"s3-{size // MIB}-{n}.bin", size)
                try:
                    s3.upload_file(
                        str(path), BUCKET, path.name, Config=TransferConfig(multipart_chunksize=64 * MIB)
                    )
                finally:
                    path.unlink(missing_ok=True)
                sources.append(path.name)
            urls = [f"s3://{BUCKET}/{name}" for name in sources]
            results.append((size, _migrate(ws, urls, size, root, {**_env(ws), **moto.env})))
            for name in sources:
                s3.delete_object(Bucket=BUCKET, Key=name)
    yield from _figures("s3", results)


def run(cfg: BenchConfig) -> Iterator[Figure]:
    """Migrate FILES small, then FILES big random files (local, then S3), TRANSFERS at once, in child
    processes, and compare their peaks.

    The bytes are random, the workspace's processing is manual: the emulator probes the file, finds no
    video in it and ends it in status error; each run stops once the upload is complete (wait_timeout=0).
    """
    size = QUICK if cfg.quick else FULL
    root = cfg.subdir("memory")
    with EmulatorProcess(root) as emu:
        ws = emu.ctl().create_workspace(processing="manual")
        yield from _local(cfg, ws, root, size["local"])
        yield from _s3(cfg, ws, root, size["s3"])

"""A migration's inventory as its options read it: routing, shard, an S3 prefix's include / exclude rules."""

from __future__ import annotations

from connectors.s3 import S3Config
from core.item import parse_shard
from flows.migrate.options import MigrateOptions
from tasks.migrate.plan import Plan, read_plan

__all__ = ["read_migration_plan"]


def read_migration_plan(opts: MigrateOptions, s3: S3Config | None) -> Plan:
    """The inventory as these options read it (routing, shard, an S3 prefix's include / exclude rules)."""
    return read_plan(
        opts.inventory,
        parent_id=opts.parent_id,
        parent_map=opts.parent_map or (),
        via=opts.via,
        s3=s3,
        shard=_shard(opts),
        include=opts.include or (),
        exclude=opts.exclude or (),
        ignore_case=opts.ignore_case,
        folder_map=opts.folder_map,
        captions=None if opts.dry_run else opts.captions,  # a dry run writes nothing, captions included
    )


def _shard(opts: MigrateOptions) -> tuple[int, int] | None:
    return parse_shard(opts.shard) if opts.shard else None

"""Errors of the remote ledger (s3://): its replication, its lock and its lease; messages name no secret."""

from __future__ import annotations


class RemoteLedgerError(Exception):
    """The remote ledger cannot do what was asked (bad URL, Litestream or S3 failed, sync unverified)."""


class RemoteLedgerBusyError(RemoteLedgerError):
    """Another run holds the remote ledger's lock and its lease has not expired (the CLI exits 2)."""


class RemoteLedgerLostError(RemoteLedgerError):
    """This run no longer holds the lock (its lease ran out, or another run took it); replication stopped."""

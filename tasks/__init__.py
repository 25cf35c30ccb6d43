"""Prefect tasks over batches of items, and the plain per-item functions they call."""

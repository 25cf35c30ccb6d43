"""Choosing how an item travels: tus, import by URL, or one single-request upload."""

from __future__ import annotations

from typing import Literal

Mode = Literal["tus", "url", "single"]


class RoutingError(ValueError):
    """The item's source cannot travel the way --via asks."""


def source_kind(source: str) -> Literal["http", "s3", "file"]:
    """Classify a source as an http(s) URL, an S3 object, or a local file."""
    lowered = source.lower()
    if lowered.startswith(("http://", "https://")):
        return "http"
    if lowered.startswith("s3://"):
        return "s3"
    return "file"


def choose_mode(source: str, via: str) -> Mode:
    """Pick the upload mode for a source under the --via setting (auto, tus, url, single)."""
    kind = source_kind(source)
    if kind == "http":
        if via in ("auto", "url"):
            return "url"
        raise RoutingError(f"an http(s) source can only be imported by URL, not with --via {via}")
    if via in ("auto", "tus"):
        return "tus"
    if via == "single":
        return "single"
    if via == "url":
        if kind == "s3":
            return "url"
        raise RoutingError("a local file cannot be imported by URL; use --via auto, tus or single")
    raise RoutingError(f"unknown --via value {via!r} (expected auto, tus, url or single)")

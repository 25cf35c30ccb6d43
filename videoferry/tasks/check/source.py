"""Check: the size and md5 of an item's source (file, S3 object), read in constant memory."""

from __future__ import annotations

import hashlib

from videoferry.connectors.s3 import S3Config
from videoferry.connectors.sources import SourceError, iter_chunks, open_source
from videoferry.core.item import ItemSpec, SourceKind
from videoferry.tasks.check.compare import SourceFacts

#: Bytes read per call while hashing a source.
HASH_CHUNK = 8 * 1024 * 1024


def source_facts(spec: ItemSpec, *, want_md5: bool, s3: S3Config | None) -> SourceFacts:
    """Size (and md5 when asked) of the item's source; an http(s) source or a platform video (its link is
    resolved only to migrate it) only the inventory's size, if any.

    A source that cannot be opened or read gives SourceFacts(error=...) naming the reason (never a URL).
    """
    if spec.source_kind in (SourceKind.URL, SourceKind.PLATFORM):
        return SourceFacts(size=spec.source_size)  # not read: the service fetched it (size None: unknown)
    try:
        source = open_source(spec.source, s3=s3)
        if not want_md5:
            return SourceFacts(size=source.size)
        digest = hashlib.md5(usedforsecurity=False)
        for chunk in iter_chunks(source, HASH_CHUNK):
            digest.update(chunk)
        return SourceFacts(size=source.size, md5=digest.hexdigest())
    except SourceError as exc:
        return SourceFacts(error=exc.reason)
    except OSError as exc:
        return SourceFacts(error=f"cannot read ({exc.strerror or type(exc).__name__})")

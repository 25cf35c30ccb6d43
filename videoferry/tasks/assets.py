"""Which asset of a video to copy (archive, backup): the original when kept, else the best downloadable."""

from __future__ import annotations

import re

from videoferry.connectors.models import Asset, Video

__all__ = ["QUALITY_ORDER", "choose_asset", "extension"]

#: Qualities from best to worst; "original" wins when the service kept it (spec convention 7).
QUALITY_ORDER = ("original", "2160p", "1440p", "1080p", "720p", "480p", "360p")


def _rank(asset: Asset) -> int:
    quality = (asset.quality or "").lower()
    return QUALITY_ORDER.index(quality) if quality in QUALITY_ORDER else len(QUALITY_ORDER)


def choose_asset(video: Video, quality: str = "best") -> Asset | None:
    """The asset to copy: "best" is the original when kept, else the highest quality; downloadable only."""
    usable = [a for a in video.assets or [] if a.download_link]
    if quality != "best":
        usable = [a for a in usable if (a.quality or "").lower() == quality.lower()]
    return min(usable, key=_rank) if usable else None


def extension(asset: Asset) -> str:
    """The file extension of a copied asset: a short filetype, else the original name's, else mp4."""
    filetype = (asset.filetype or "").lower()
    if re.fullmatch(r"[a-z0-9]{1,5}", filetype):
        return filetype
    name = asset.original_name or ""
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix if re.fullmatch(r"[a-z0-9]{1,5}", suffix) else "mp4"

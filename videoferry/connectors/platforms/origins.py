"""Where each listed item came from (Origin), kept for a whole listing in columns (Origins: columns of a
few hundred bytes a video, not a Python object each) and looked up by key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Origin:
    """Where one item came from, as the report and the dry run say it (never a download link)."""

    folder: str | None
    folder_id: str | None
    url: str | None
    created: str | None
    privacy: str | None
    #: The platform's privacy has no match at the service (left as the target's default).
    privacy_unmapped: bool = False
    #: Seconds and bytes as the listing says them (None: not said).
    duration: float | None = None
    size: int | None = None
    #: The keys its player URLs name it by besides its own (SourceVideo.player_ids: Mux's playback ids).
    player_ids: tuple[str, ...] = ()


#: Origins' columns: the key, then Origin's fields in order.
_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "key": pl.String,
    "folder": pl.String,
    "folder_id": pl.String,
    "url": pl.String,
    "created": pl.String,
    "privacy": pl.String,
    "privacy_unmapped": pl.Boolean,
    "duration": pl.Float64,
    "size": pl.Int64,
    "player_ids": pl.List(pl.String),
}
#: How many origins wait as objects before they are made a block of columns.
BATCH = 1000


class Origins(Mapping[str, Origin]):
    """Each listed key's Origin, in columns in listing order (the blocks as chunks, not copied), looked up
    through the keys sorted once the listing is done (a binary search); the first origin of a key added
    twice is kept. add() while listing, then read."""

    def __init__(self) -> None:
        self._pending: list[tuple[str, Origin]] = []
        self._blocks: list[pl.DataFrame] = []
        self._index: tuple[pl.DataFrame, pl.Series, pl.Series] | None = None

    def add(self, key: str, origin: Origin) -> None:
        """Keep `key`'s origin (a key already added keeps its first)."""
        self._pending.append((key, origin))
        self._index = None
        if len(self._pending) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        rows = [
            (key, o.folder, o.folder_id, o.url, o.created, o.privacy, o.privacy_unmapped, o.duration, o.size,
             list(o.player_ids))
            for key, o in self._pending
        ]  # fmt: skip
        self._blocks.append(pl.DataFrame(rows, schema=_SCHEMA, orient="row"))
        self._pending.clear()

    def _indexed(self) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
        """The origins (each key's first), their keys sorted, and the row of each sorted key."""
        if self._index is None:
            self._flush()
            whole = pl.concat(self._blocks, rechunk=False) if self._blocks else pl.DataFrame(schema=_SCHEMA)
            if whole["key"].is_duplicated().any():  # a page shifted while listing: copied once, only then
                whole = whole.unique("key", keep="first", maintain_order=True)
            self._blocks = [whole]
            order = whole["key"].arg_sort()
            self._index = (whole, whole["key"].gather(order), order)
        return self._index

    def get(self, key: str, default: Origin | None = None) -> Origin | None:  # type: ignore[override]
        if not self._pending and all(block.height == 0 for block in self._blocks):
            return default  # nothing listed (a migration of files): asked once per item, no frame built
        frame, keys, order = self._indexed()
        at = int(keys.search_sorted(key, side="left"))
        if at >= keys.len() or keys[at] != key:
            return default
        return _origin(frame.row(int(order[at]), named=True))

    def __getitem__(self, key: str) -> Origin:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._indexed()[0]["key"].to_list())

    def __len__(self) -> int:
        return self._indexed()[0].height

    def unmapped(self) -> int:
        """How many origins have a privacy the service has no match for."""
        return int(self._indexed()[0]["privacy_unmapped"].sum())


def _origin(row: dict[str, Any]) -> Origin:
    fields = {name: value for name, value in row.items() if name != "key"}
    fields["privacy_unmapped"] = bool(fields["privacy_unmapped"])
    fields["player_ids"] = tuple(fields["player_ids"] or ())
    return Origin(**fields)

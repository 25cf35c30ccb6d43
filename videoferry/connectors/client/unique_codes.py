"""Unique access codes of a live event (spec 4.7): batches, their list, and the CSV of the codes."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import date
from typing import Any

from videoferry.connectors.client.live_models import CodesDownload, Page, UniqueCode, UniqueCodesBatch
from videoferry.connectors.client.live_support import as_model, day, deleting, read_one, read_page, segment
from videoferry.connectors.client.paging import walk_items
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import ResponseFormatError
from videoferry.connectors.retry import CallKind

__all__ = ["UniqueCodes", "UniqueCodesBatch", "UniqueCode", "CodesDownload", "parse_codes_csv"]


def _path(event_id: str, batch_id: str | None = None, suffix: str = "") -> str:
    path = f"/v2/live/events/{segment(event_id, 'event_id')}/unique-codes"
    return path if batch_id is None else f"{path}/{segment(batch_id, 'batch_id')}{suffix}"


def _column(name: str) -> str:
    """A CSV header as a field name: "Activation Date" -> "activation_date"."""
    return "_".join(name.strip().lower().split())


def _count(value: str | None) -> int | None:
    text = (value or "").strip()
    return int(text) if text.isdigit() else None


def parse_codes_csv(text: str) -> CodesDownload:
    """The download: an optional `sep=<c>` line, a header row (Code, Activation Date, Times Used and Usage
    Limit when the batch has max_count), one row per code. Columns are matched by name, case-insensitively;
    unknown ones are kept as extra fields of each code. ResponseFormatError (never quoting a code) otherwise.
    """
    lines = text.lstrip("\ufeff").splitlines()
    delimiter = ","
    if lines and lines[0].strip().lower().startswith("sep=") and len(lines[0].strip()) == 5:
        delimiter = lines[0].strip()[4]
        lines = lines[1:]
    rows = list(csv.reader(lines, delimiter=delimiter))
    if not rows or "code" not in [_column(c) for c in rows[0]]:
        raise ResponseFormatError("the codes file has no Code column", operation="download_unique_codes")
    columns = [_column(c) for c in rows[0]]
    codes: list[UniqueCode] = []
    for row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        cells: dict[str, Any] = dict(zip(columns, row, strict=False))
        for name in ("times_used", "usage_limit"):
            if name in cells:
                cells[name] = _count(cells[name])
        if "activation_date" in cells:
            cells["activation_date"] = cells["activation_date"].strip() or None
        codes.append(as_model(UniqueCode, cells, "download_unique_codes"))
    return CodesDownload(text=text, columns=rows[0], codes=codes)


class UniqueCodes:
    """/v2/live/events/:event_id/unique-codes: batches of codes (3 letters + 3 digits) that admit viewers.

    The first batch turns the event's unique_codes_enabled on and resets its privacy_share; deleting the
    last turns it off (spec 3.2). The codes exist only in the CSV download: they are secrets, hidden from
    the reprs of CodesDownload and UniqueCode, and never logged.
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def create(
        self,
        event_id: str,
        name: str,
        codes_amount: int,
        *,
        max_count: int | None = None,
        sessions_per_code: int | None = None,
        starts_at: date | str | None = None,
        expires_at: date | str | None = None,
    ) -> UniqueCodesBatch:
        """POST: a batch of codes_amount (1..9999) codes; name up to 255 characters, unique in the event.

        max_count (uses per code, 1..9999) and sessions_per_code (1..100) default to unlimited; starts_at
        (not in the past) defaults to today, expires_at to never; dates are sent as YYYY-MM-DD. A taken name
        is NameTakenError (400203). A create: after an unknown outcome, look it up with find().
        """
        if not name:
            raise ValueError("name must not be empty")
        payload: dict[str, Any] = {"name": name, "codes_amount": codes_amount}
        if max_count is not None:
            payload["max_count"] = max_count
        if sessions_per_code is not None:
            payload["sessions_per_code"] = sessions_per_code
        if starts_at is not None:
            payload["starts_at"] = day(starts_at)
        if expires_at is not None:
            payload["expires_at"] = day(expires_at)
        body = self._transport.call(
            "POST", _path(event_id), operation="create_unique_codes", kind=CallKind.CREATE, json_body=payload
        )
        return read_one(body, UniqueCodesBatch, "create_unique_codes")

    def list_batches(self, event_id: str, *, page: int = 1, per_page: int = 100) -> Page[UniqueCodesBatch]:
        """GET: one page of the event's batches (parameter names not shown: page, per_page)."""
        body = self._transport.call(
            "GET",
            _path(event_id),
            operation="list_unique_codes",
            kind=CallKind.IDEMPOTENT,
            params={"page": page, "per_page": per_page},
        )
        return read_page(body, UniqueCodesBatch, "list_unique_codes")

    def iter_batches(self, event_id: str, *, per_page: int = 100) -> Iterator[UniqueCodesBatch]:
        """Every batch of the event, page by page, each once."""
        return walk_items(
            lambda n: self.list_batches(event_id, page=n, per_page=per_page),
            lambda batch: batch.id,
            "list_unique_codes",
        )

    def find(self, event_id: str, name: str) -> UniqueCodesBatch | None:
        """The event's batch of that name (names are unique within an event), or None."""
        return next((b for b in self.iter_batches(event_id) if b.name == name), None)

    def get(self, event_id: str, batch_id: str) -> UniqueCodesBatch:
        """GET one batch; NotFoundError when missing."""
        body = self._transport.call(
            "GET", _path(event_id, batch_id), operation="get_unique_codes", kind=CallKind.IDEMPOTENT
        )
        return read_one(body, UniqueCodesBatch, "get_unique_codes")

    def download(self, event_id: str, batch_id: str) -> CodesDownload:
        """GET .../download: the batch's CSV, parsed (the raw text is kept in .text)."""
        text = self._transport.call(
            "GET",
            _path(event_id, batch_id, "/download"),
            operation="download_unique_codes",
            kind=CallKind.IDEMPOTENT,
            headers={"Accept": b"text/csv, */*;q=0.5"},
            text=True,
        )
        return parse_codes_csv(str(text or ""))

    def delete(self, event_id: str, batch_id: str) -> None:
        """DELETE: the batch and its codes (viewers lose access); a 404 after a lost answer counts as done."""
        self._transport.call(
            "DELETE",
            _path(event_id, batch_id),
            operation="delete_unique_codes",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_unique_codes"),
        )

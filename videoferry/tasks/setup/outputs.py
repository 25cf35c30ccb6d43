"""The outputs a person needs after setup (links, stream keys, codes): files of mode 0600 or S3 only."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from videoferry.connectors.client.live_models import LiveEvent
from videoferry.connectors.desired_state import DesiredState
from videoferry.tasks.private_files import private_dir, write_private

if TYPE_CHECKING:
    from videoferry.connectors.client import VideoClient

EVENTS_FILE = "events.csv"
EVENT_COLUMNS = ("name", "parent_id", "event_id", "play_link", "rtmp_link", "stream_key")


def slug(text: str) -> str:
    """A name as a file name: letters, digits, dot, dash and underscore kept, anything else '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "unnamed"


class Outputs:
    """A directory (created 0700, files 0600, its codes/<event> folders 0700 and tightened when found
    otherwise: tasks/private_files.py) or an s3://bucket/prefix/ the outputs are written to."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._s3 = where.startswith("s3://")
        if not self._s3:
            private_dir(Path(where))

    def exists(self, name: str) -> bool:
        """Whether an output of that relative name was written before."""
        if self._s3:
            from videoferry.connectors.s3 import head_object, parse_s3_uri, shared_s3_client

            bucket, prefix = parse_s3_uri(self.where)
            try:
                head_object(shared_s3_client(), bucket, f"{prefix.rstrip('/')}/{name}".lstrip("/"))
            except Exception:  # noqa: BLE001 - missing or unreadable: write it
                return False
            return True
        return (Path(self.where) / name).exists()

    def write(self, name: str, text: str) -> str:
        """Write one output; the path or URI written (the content is never logged)."""
        if self._s3:
            from videoferry.connectors.s3 import parse_s3_uri, shared_s3_client

            bucket, prefix = parse_s3_uri(self.where)
            key = f"{prefix.rstrip('/')}/{name}".lstrip("/")
            shared_s3_client().put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"))
            return f"s3://{bucket}/{key}"
        root = Path(self.where)
        path = root / name
        private_dir(root, *Path(name).parent.parts)
        write_private(path, text.encode("utf-8"))
        return str(path)


def events_text(events: Mapping[tuple[str, str], LiveEvent]) -> str:
    """events.csv: per event its play link, RTMP link and stream key."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EVENT_COLUMNS)
    for (parent, name), event in sorted(events.items()):
        writer.writerow(
            [name, parent, event.id, event.play_link or "", event.rtmp_link or "", event.streamkey or ""]
        )
    return buffer.getvalue()


def codes_name(event_name: str, batch_name: str) -> str:
    """The relative name of a batch's codes file."""
    return f"codes/{slug(event_name)}/{slug(batch_name)}.csv"


def write_outputs(
    client: VideoClient,
    state: DesiredState,
    events: Mapping[tuple[str, str], LiveEvent],
    outputs: Outputs,
    batches: Mapping[tuple[str, str], str] | None = None,
) -> list[str]:
    """events.csv, and each batch's codes CSV as the service gives it (downloaded once, when missing).

    batches maps (event id, batch name) to the batch's id when known; others are looked up by name.
    """
    written = [outputs.write(EVENTS_FILE, events_text(events))] if events else []
    for spec in state.events:
        event = events.get((spec.parent_id, spec.name))
        if event is None:
            continue
        for batch in spec.batches or ():
            name = codes_name(spec.name, batch.name)
            if outputs.exists(name):
                continue
            batch_id = (batches or {}).get((event.id, batch.name))
            if batch_id is None:
                found = client.unique_codes.find(event.id, batch.name)
                if found is None:
                    continue
                batch_id = found.id
            download = client.unique_codes.download(event.id, batch_id)
            written.append(outputs.write(name, download.text))
    return written

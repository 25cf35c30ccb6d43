"""The archive's small files: chat in three formats, QoS as JSON and Parquet, the per-event manifest."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from connectors.client import VideoClient
from tasks.archive.events import QOS_BUCKET, Layout, Recording, qos_windows, stream_lifetime
from tasks.destination import Destination

__all__ = ["save_chat", "save_qos", "write_manifest", "MANIFEST_COLUMNS"]

#: Columns of manifest.parquet (and keys of each recording in manifest.json). No link is ever among them.
MANIFEST_COLUMNS: dict[str, type[pl.DataType]] = {
    "event_id": pl.String,
    "event_name": pl.String,
    "stream_id": pl.String,
    "video_id": pl.String,
    "title": pl.String,
    "asset_id": pl.String,
    "quality": pl.String,
    "bytes": pl.Int64,
    "md5": pl.String,
    "object_key": pl.String,
    "chat_keys": pl.String,
    "qos_keys": pl.String,
    "archived_at": pl.String,
}
_QOS_COLUMNS: dict[str, type[pl.DataType]] = {
    "event_id": pl.String,
    "stream_id": pl.String,
    "timestamp": pl.String,
    "frame_rate": pl.Float64,
    "bitrate_video": pl.Float64,
    "bitrate_audio": pl.Float64,
    "packet_loss": pl.Float64,
    "status": pl.Int64,
    "session_host": pl.String,
    "session_client_ip": pl.String,
    "session_country": pl.String,
}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str).encode("utf-8")


def _parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def save_chat(client: VideoClient, dest: Destination, rec: Recording) -> list[str]:
    """chat.json (the service's answer as sent), chat.csv and chat.txt of the recording's stream."""
    layout = Layout(rec.event_id, rec.stream_id)
    live = client.live_events
    body = live.chat_body(rec.event_id, rec.stream_id)
    files = [
        ("chat.json", _json_bytes(body), "application/json"),
        ("chat.csv", live.chat_csv(rec.event_id, rec.stream_id).encode("utf-8"), "text/csv"),
        ("chat.txt", live.chat_txt(rec.event_id, rec.stream_id).encode("utf-8"), "text/plain"),
    ]
    keys = []
    for name, data, content_type in files:
        key = dest.key(*layout.sidecar(name))
        dest.put_bytes(key, data, content_type)
        keys.append(key)
    return keys


def save_qos(client: VideoClient, dest: Destination, rec: Recording) -> tuple[list[str], int]:
    """qos.json and qos.parquet over the stream's whole lifetime, window by window; (keys, record count)."""
    start, end = stream_lifetime(rec)
    windows = qos_windows(start, end)
    session: dict[str, Any] | None = None
    seen: dict[str, dict[str, Any]] = {}
    for window_start, window_end in windows:
        report = client.live_events.qos(
            rec.event_id, stream_id=rec.stream_id, from_=window_start, to=window_end, group_time=QOS_BUCKET
        )
        if session is None and report.session is not None:
            session = report.session.model_dump(mode="json")
        for record in report.qos:
            row = record.model_dump(mode="json")
            seen.setdefault(str(row.get("timestamp")), row)  # a bucket on a window edge comes once
    records = [seen[k] for k in sorted(seen)]
    document = {
        "event_id": rec.event_id,
        "stream_id": rec.stream_id,
        "from": start.isoformat(),
        "to": end.isoformat(),
        "group_time": f"{int(QOS_BUCKET.total_seconds())}s",
        "windows": len(windows),
        "session": session,
        "qos": records,
    }
    sess = session or {}
    rows = [
        {
            "event_id": rec.event_id,
            "stream_id": rec.stream_id,
            "timestamp": r.get("timestamp"),
            "frame_rate": r.get("frame_rate"),
            "bitrate_video": r.get("bitrate_video"),
            "bitrate_audio": r.get("bitrate_audio"),
            "packet_loss": r.get("packet_loss"),
            "status": r.get("status"),
            "session_host": sess.get("host"),
            "session_client_ip": sess.get("client_ip"),
            "session_country": sess.get("country"),
        }
        for r in records
    ]
    layout = Layout(rec.event_id, rec.stream_id)
    json_key = dest.key(*layout.sidecar("qos.json"))
    parquet_key = dest.key(*layout.sidecar("qos.parquet"))
    dest.put_bytes(json_key, _json_bytes(document), "application/json")
    dest.put_bytes(
        parquet_key, _parquet_bytes(pl.DataFrame(rows, schema=_QOS_COLUMNS)), "application/octet-stream"
    )
    return [json_key, parquet_key], len(records)


def write_manifest(
    dest: Destination, event_id: str, rows: Sequence[Mapping[str, Any]], written_at: datetime
) -> list[str]:
    """manifest.json and manifest.parquet of one event: one row per archived recording."""
    clean = [{name: row.get(name) for name in MANIFEST_COLUMNS} for row in rows]
    document = {
        "event_id": event_id,
        "written_at": written_at.isoformat(),
        "layout": "<prefix>/<event_id>/<stream_id>/<video_id>.<ext> with chat.* and qos.* beside it",
        "recordings": clean,
    }
    json_key = dest.key(*Layout(event_id, "").manifest("manifest.json"))
    parquet_key = dest.key(*Layout(event_id, "").manifest("manifest.parquet"))
    dest.put_bytes(json_key, _json_bytes(document), "application/json")
    dest.put_bytes(
        parquet_key, _parquet_bytes(pl.DataFrame(clean, schema=MANIFEST_COLUMNS)), "application/octet-stream"
    )
    return [json_key, parquet_key]

"""setup against the emulator: rooms from CSV, posters set once, the upcoming stream moved, outputs in S3."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.flows.test_setup import SECRET_ENV, now, write, writes
from videoferry.connectors.client import VideoClient
from videoferry.connectors.config import Settings
from videoferry.emulator.control import EmulatorControl, Workspace
from videoferry.flows.setup.options import SetupOptions
from videoferry.flows.setup.runner import run_plan, run_up

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=500, rate_per_minute=30000)


@pytest.fixture()
def settings(ws: Workspace) -> Settings:
    return Settings(ws.base_url, ws.upload_url, ws.token, rate_per_second=500, rate_per_minute=30000)


@pytest.fixture()
def image_url() -> Iterator[str]:
    """A loopback address serving a small PNG (the service fetches posters itself)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/poster"
    finally:
        server.shutdown()
        server.server_close()


def test_rooms_from_csv_with_posters_and_streams(
    tmp_path: Path, ws: Workspace, settings: Settings, emu_control: EmulatorControl, image_url: str
) -> None:
    (tmp_path / "rooms.csv").write_text(
        "name,scheduled_time,stream_start,poster,latency_mode\n"
        f"Hall A,2027-05-01T09:00:00Z,2027-05-01T08:50:00Z,{image_url}?a,reduced\n"
        f"Hall B,2027-05-01T10:00:00Z,,{image_url}?b,\n",
        encoding="utf-8",
    )
    data: dict[str, Any] = {
        "parent_id": ws.project_id,
        "events_csv": {
            "path": "rooms.csv",
            "defaults": {
                "type": "one-time",
                "restreams": [{"name": "youtube", "url": "rtmp://yt.example/live2", "key": "${YT_KEY}"}],
            },
        },
    }
    file = write(tmp_path / "conf.yaml", data)
    opts = SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=str(tmp_path / "out"))
    assert run_up(opts, settings).exit_code == 0
    with VideoClient.from_settings(settings) as client:
        halls = {str(e.name): e for e in client.live_events.iter_events(parent_id=ws.project_id)}
    assert sorted(halls) == ["Hall A", "Hall B"] and halls["Hall A"].latency_mode == "reduced"
    stream = halls["Hall A"].stream
    assert stream is not None and stream.started_at is not None
    assert stream.started_at.isoformat().startswith("2027-05-01T08:50:00")
    assert all(e.poster and "default" not in (e.poster.original or "") for e in halls.values())

    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    assert writes(emu_control, ws, mark) == []  # posters and the stream are not sent again

    (tmp_path / "rooms.csv").write_text(
        "name,scheduled_time,stream_start,poster,latency_mode\n"
        f"Hall A,2027-05-01T09:00:00Z,2027-05-01T08:45:00Z,{image_url}?a,reduced\n"
        f"Hall B,2027-05-01T10:00:00Z,,{image_url}?b2,\n",
        encoding="utf-8",
    )
    shown = "\n".join(run_plan(opts, settings).lines)
    assert "started_at: 2027-05-01T08:50:00Z -> 2027-05-01T08:45:00Z" in shown and "poster" in shown
    assert "?b2" not in shown  # a poster address may be a signed link: never shown
    mark = now(emu_control, ws)
    assert run_up(opts, settings).exit_code == 0
    sent = sorted((r["method"], r["path"]) for r in writes(emu_control, ws, mark))
    assert sent == [("POST", "/v2/poster"), ("PUT", f"/v2/live/events/{halls['Hall A'].id}/stream")]
    assert run_plan(opts, settings, drift=True).exit_code == 0


def test_outputs_to_s3(tmp_path: Path, ws: Workspace, settings: Settings, s3_bucket: str) -> None:
    data = {
        "parent_id": ws.project_id,
        "events": [
            {"name": "Course", "type": "recurring", "unique_codes": [{"name": "cohort 1", "codes_amount": 4}]}
        ],
    }
    file = write(tmp_path / "course.yaml", data)
    outputs = f"s3://{s3_bucket}/setup/"
    up = run_up(SetupOptions(file=file, ledger=str(tmp_path / "l.db"), outputs=outputs), settings)
    assert up.exit_code == 0
    s3 = boto3.session.Session().client("s3", region_name="us-east-1")
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=s3_bucket)["Contents"])
    assert keys == ["setup/codes/Course/cohort-1.csv", "setup/events.csv"]
    codes = s3.get_object(Bucket=s3_bucket, Key=keys[0])["Body"].read().decode()
    assert codes.startswith("sep=,") and len(codes.strip().splitlines()) == 2 + 4


def test_a_file_on_s3_with_its_csv_beside_it(
    tmp_path: Path, ws: Workspace, settings: Settings, s3_bucket: str
) -> None:
    s3 = boto3.session.Session().client("s3", region_name="us-east-1")
    text = f"parent_id: {ws.project_id}\nevents_csv:\n  path: rooms.csv\n  defaults: {{type: one-time}}\n"
    s3.put_object(Bucket=s3_bucket, Key="conf/setup.yaml", Body=text.encode())
    s3.put_object(
        Bucket=s3_bucket, Key="conf/rooms.csv", Body=b"name,latency_mode\nRoom X,reduced\nRoom Y,fast\n"
    )
    opts = SetupOptions(file=f"s3://{s3_bucket}/conf/setup.yaml", ledger=str(tmp_path / "l.db"))
    refused = run_plan(opts, settings)
    assert refused.exit_code == 2
    assert refused.lines == [
        f"error: s3://{s3_bucket}/conf/rooms.csv:3: latency_mode: one of standard, reduced"
    ]
    s3.put_object(Bucket=s3_bucket, Key="conf/rooms.csv", Body=b"name,latency_mode\nRoom X,reduced\n")
    planned = run_plan(opts, settings)
    assert planned.exit_code == 0 and planned.counts == {"create": 1}
    missing = run_plan(SetupOptions(file=f"s3://{s3_bucket}/conf/none.yaml"), settings)
    assert missing.exit_code == 2 and "not found" in missing.lines[0]

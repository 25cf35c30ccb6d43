"""Secrets: nothing a run writes (logs, output, reports, ledger text, artifacts, exceptions) holds a secret.

Searched for: the API token, every upload endpoint the service handed out (and its secret path), the
presigned URLs' signatures, credentials and query strings, the AWS secret key, and a signed query of an
http(s) source given in the inventory.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import uuid4

import polars as pl
import pytest
from pydantic import SecretStr

from connectors.client import VideoClient
from connectors.errors import VideoApiError
from connectors.limiter import ApiRateLimiter
from connectors.s3 import S3Config, shared_s3_client
from connectors.sources import open_source
from connectors.tus import TusError, TusUpload
from emulator.control import EmulatorControl, Workspace
from flows.ledger_report import build_report, markdown
from flows.migrate.runner import run_migration
from state.ledger import Ledger
from tasks.migrate.context import MigrateContext
from tests.flows.helpers import cli_env, options, run_cli, settings_for, write_inventory
from tests.state.helpers import spec

AWS_KEY_ID = "AKIAVFERRYSECRET0042"
AWS_SECRET = "vf-aws-secret-access-key-never-to-be-seen"
AWS_SESSION = "vfSessionTokenNeverToBeSeen0123456789"
#: A signed query the user put on an http(s) source in the inventory.
USER_QUERY_SECRET = "c0ffee0ddba11f00dfacade5ec12e7"

#: Markers of any presigned S3 URL (SigV4 / SigV2 query parameters with a value).
PRESIGN_MARKERS = ("X-Amz-Signature=", "X-Amz-Credential=", "X-Amz-Security-Token=", "AWSAccessKeyId=")

FAULTS: list[dict[str, Any]] = [
    {"kind": "error", "status": 503, "method": "GET", "path": "^/v1/videos$", "rate": 0.3},
    {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/init$", "times": 2},
    {"kind": "drop_after_commit", "method": "POST", "path": "^/v2/video$", "times": 1},
    {"kind": "truncate_body", "method": "PATCH", "path": "^/upload/", "times": 2, "fraction": 0.5},
    {"kind": "error", "status": 502, "method": "PATCH", "path": "^/upload/", "times": 1},
    {"kind": "latency", "ms": 30, "rate": 0.2},
]


class _FakeS3(BaseHTTPRequestHandler):
    """Serves one clip for any GET (what a presigned S3 URL fetch needs) and records every request target."""

    clip: bytes = b""
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "video/mp4")
        self.send_header("Content-Length", str(len(self.clip)))
        self.end_headers()
        self.wfile.write(self.clip)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture()
def fake_s3(clip_factory, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """An "S3 endpoint" on loopback serving a clip; presigning is offline, so only the fetch reaches it."""
    seen: list[str] = []
    handler = type(
        "Handler", (_FakeS3,), {"clip": clip_factory(0.5, name="s3.mp4").read_bytes(), "seen": seen}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION)
    for name in ("AWS_SECURITY_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield endpoint, seen
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Secrets:
    """Every secret value to look for, gathered from the service's and the S3 endpoint's side."""

    token: str
    upload_url: str
    endpoints: set[str] = field(default_factory=set)
    presigned_queries: set[str] = field(default_factory=set)

    def harvest(self, control: EmulatorControl, ws: Workspace, s3_seen: list[str]) -> None:
        """Endpoints from the emulator's request log; presigned queries from what the fake S3 saw."""
        for entry in control.requests(ws.workspace_id):
            if entry["path"].startswith("/upload/"):
                self.endpoints.add(self.upload_url + entry["path"])
        for target in s3_seen:
            if "X-Amz-" in target:
                self.presigned_queries.add(target.split("?", 1)[1])

    def needles(self) -> dict[str, str]:
        """name -> text that must not appear anywhere."""
        found: dict[str, str] = {"token": self.token, "aws secret": AWS_SECRET, "aws key id": AWS_KEY_ID}
        found["aws session token"] = AWS_SESSION
        found["user query"] = USER_QUERY_SECRET
        for marker in PRESIGN_MARKERS:
            found[f"marker {marker}"] = marker
        for endpoint in self.endpoints:
            found[f"endpoint {endpoint[-8:]}"] = endpoint
            found[f"endpoint secret {endpoint[-8:]}"] = endpoint.rstrip("/").rsplit("/", 1)[-1]
        for query in self.presigned_queries:
            signature = re.search(r"X-Amz-Signature=([0-9a-f]+)", query)
            assert signature, "the fake S3 saw a presigned URL without a signature"
            found[f"signature {signature.group(1)[:8]}"] = signature.group(1)
            found[f"query {signature.group(1)[:8]}"] = query
        return found


def assert_clean(texts: dict[str, str], secrets: Secrets) -> None:
    """No text contains any secret (case-insensitive for the URL markers)."""
    leaks = []
    for where, text in texts.items():
        lowered = text.lower()
        for name, needle in secrets.needles().items():
            if needle and (needle in text or (name.startswith("marker") and needle.lower() in lowered)):
                at = lowered.find(needle.lower())
                leaks.append(f"{name} in {where}: ...{text[max(0, at - 60) : at + 20]!r}")
    assert not leaks, "\n".join(leaks[:20])


def ledger_texts(path: Path) -> dict[str, str]:
    """Every table of the ledger as text, except the two columns that hold a capability by design.

    items.upload_endpoint (the tus endpoint, forgotten once the upload completes) and items.source (an
    inventory's http(s) source must be kept whole to be fetched again) live only in the 0600 ledger file.
    """
    texts: dict[str, str] = {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            keep = [
                i
                for i, n in enumerate(names)
                if not (table == "items" and n in ("upload_endpoint", "source"))
            ]
            rows = [[row[i] for i in keep] for row in cursor.fetchall()]
            texts[f"ledger table {table}"] = json.dumps(rows, default=str, ensure_ascii=False)
    book = Ledger.open(path, create=False)
    try:
        report = build_report(book)
        texts["report rows"] = json.dumps(report.items.to_dicts(), default=str, ensure_ascii=False)
        texts["artifact markdown"] = markdown(report)
        texts["item reprs"] = "\n".join(repr(i) for i in book.items())
        texts["summary"] = json.dumps(book.summary(), default=str)
    finally:
        book.close()
    return texts


def files_texts(folder: Path) -> dict[str, str]:
    """Every report file as text (Parquet read back into CSV text)."""
    texts = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".parquet":
            texts[str(path)] = pl.read_parquet(path).write_csv()
        elif path.is_file():
            texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    assert texts, f"no report files in {folder}"
    return texts


def _rows(clip_factory: Callable[..., Path], fake_s3_url: str, tmp: Path) -> list[dict[str, Any]]:
    closed = f"http://127.0.0.1:9/gone.mp4?X-Amz-Signature={USER_QUERY_SECRET}&token=x"
    return [
        *({"source": str(clip_factory(1.0, name=f"s{i}.mp4")), "title": f"Секрет {i}"} for i in range(4)),
        {"source": f"{fake_s3_url}/ext/signed.mp4?sig={USER_QUERY_SECRET}", "title": "user-signed url"},
        {"source": closed, "title": "unreachable signed url"},
        {"source": str(tmp / "missing.mp4"), "title": "missing"},
    ]


def _harvest_pending_endpoints(ledger_path: Path, secrets: Secrets) -> Callable[[MigrateContext], None]:
    """on_tick: read endpoints straight from the ledger's items table while uploads are pending."""

    def tick(ctx: MigrateContext) -> None:
        with sqlite3.connect(f"file:{ledger_path}?mode=ro", uri=True) as conn:
            for (endpoint,) in conn.execute(
                "SELECT upload_endpoint FROM items WHERE upload_endpoint IS NOT NULL"
            ):
                secrets.endpoints.add(endpoint)

    return tick


def test_a_run_in_process_leaks_nothing(
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    fake_s3: tuple[str, list[str]],
    s3_server: str,
    s3_bucket: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    s3_url, s3_seen = fake_s3
    secrets = Secrets(emu.token, emu.upload_url)
    inventory = write_inventory(tmp_path / "inv.csv", _rows(clip_factory, s3_url, tmp_path))
    presigned = write_inventory(
        tmp_path / "s3.csv",
        [{"source": f"s3://media/v/clip-{i}.mp4", "title": f"presigned {i}"} for i in range(3)],
    )
    # S3 objects read by signed ranged GETs (moto) with the keys and session token set by fake_s3
    moto = S3Config(endpoint_url=s3_server + "/", region="us-east-1")  # a client of its own, built now
    for i in range(2):
        shared_s3_client(moto).upload_file(str(clip_factory(0.5, name=f"m{i}.mp4")), s3_bucket, f"m/{i}.mp4")
    ledger = tmp_path / "ledger.db"
    emu_control.set_faults(emu, FAULTS, seed=5)
    caplog.set_level(logging.DEBUG)
    outcomes = []
    for inv, via, report, s3 in (
        (str(inventory), "auto", "rep-a", None),
        (str(presigned), "url", "rep-b", S3Config(endpoint_url=s3_url, region="us-east-1")),
        (f"s3://{s3_bucket}/m/", "tus", "rep-c", moto),
    ):
        opts = options(inv, emu, tmp_path, via=via, report_dir=str(tmp_path / report), chunk_size=8 * 1024)
        tick = _harvest_pending_endpoints(ledger, secrets)
        outcomes.append(run_migration(opts, settings_for(emu), on_tick=tick, s3=s3))
    emu_control.clear_faults(emu)
    secrets.harvest(emu_control, emu, s3_seen)
    # The run did meet every kind of secret, and went through errors and retries.
    assert len(secrets.endpoints) >= 4 and len(secrets.presigned_queries) >= 3
    assert any("retrying" in r.getMessage() for r in caplog.records)
    book = Ledger.open(ledger, create=False)
    try:
        states = {i.spec.title: i.state for i in book.items()}
    finally:
        book.close()
    assert states["unreachable signed url"] == "error" and states["missing"] == "failed"
    assert states["user-signed url"] == "finished" and states["presigned 0"] == "finished"
    assert states["0"] == "finished" and states["1"] == "finished"  # the S3 objects (titles from key names)

    ours = [r for r in caplog.records if not r.name.startswith(("emulator", "uvicorn"))]
    texts = {
        "logs": "\n".join(
            f"{r.name} {r.levelname} {r.getMessage()} {r.exc_text or ''}"
            + ("".join(traceback.format_exception(*r.exc_info)) if r.exc_info else "")
            for r in ours
        ),
        "outcomes": json.dumps([o.as_dict() for o in outcomes], default=str, ensure_ascii=False),
        **ledger_texts(ledger),
        **files_texts(tmp_path / "rep-a"),
        **files_texts(tmp_path / "rep-b"),
        **files_texts(tmp_path / "rep-c"),
    }
    assert "botocore" in texts["logs"]  # boto's DEBUG records were captured (and must be clean)
    assert_clean(texts, secrets)


def _exception_texts(exc: BaseException) -> str:
    return f"{exc}\n{exc!r}\n" + "".join(traceback.format_exception(exc))


def test_exceptions_and_reprs_leak_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory
) -> None:
    secrets = Secrets(emu.token, emu.upload_url)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory())
    tus = TusUpload(chunk_size=4096, max_attempts=2, initial_wait=0.01, max_wait=0.02)
    source = open_source(str(clip_factory(0.5, name="e.mp4")))
    texts: dict[str, str] = {
        "reprs": f"{client!r} {tus!r} {settings_for(emu)!r} {settings_for(emu)} {source!r}"
    }
    try:
        session = client.uploads.create_video(parent_id=emu.project_id, title="gone", filesize=source.size)
        secrets.endpoints.add(session.endpoint)
        texts["session repr"] = repr(session)
        emu_control.set_faults(emu, [{"kind": "error", "status": 400, "path": "^/upload/"}])
        with pytest.raises(TusError) as refused:
            tus.upload(session.endpoint, source)
        texts["tus refused"] = _exception_texts(refused.value)
        emu_control.set_faults(emu, [{"kind": "error", "status": 503, "path": "^/upload/"}])
        with pytest.raises(TusError) as gave_up:
            tus.upload(session.endpoint, source)
        texts["tus gave up"] = _exception_texts(gave_up.value)
        emu_control.clear_faults(emu)
        unknown = session.endpoint + "0"  # an endpoint the service does not know: 404
        secrets.endpoints.add(unknown)
        with pytest.raises(TusError) as gone:
            tus.upload(unknown, source)
        texts["tus gone"] = _exception_texts(gone.value)
        emu_control.set_faults(emu, [{"kind": "drop_after_commit", "path": "^/v2/(init|video)$"}])
        with pytest.raises(VideoApiError) as dropped:
            client.uploads.create_video(parent_id=emu.project_id, title="dropped", filesize=source.size)
        texts["init dropped"] = _exception_texts(dropped.value)
        signed = f"http://127.0.0.1:9/x.mp4?X-Amz-Signature={USER_QUERY_SECRET}"
        with pytest.raises(VideoApiError) as url_dropped:
            client.uploads.import_url(parent_id=emu.project_id, title="url", url=signed)
        texts["import dropped"] = _exception_texts(url_dropped.value)
        emu_control.clear_faults(emu)
        wrong = VideoClient(emu.base_url, emu.upload_url, emu.token + "x", limiter=ApiRateLimiter.memory())
        with pytest.raises(VideoApiError) as unauthorized:
            wrong.videos.list()
        wrong.close()
        texts["unauthorized"] = _exception_texts(unauthorized.value)
    finally:
        emu_control.clear_faults(emu)
        tus.close()
        client.close()
    secrets.harvest(emu_control, emu, [])
    assert secrets.endpoints
    assert_clean(texts, secrets)
    assert_clean(texts, Secrets(emu.token + "x", emu.upload_url))  # nor the rejected token


def test_the_command_line_leaks_nothing(
    tmp_path: Path, emu: Workspace, emu_control: EmulatorControl, clip_factory, fake_s3: tuple[str, list[str]]
) -> None:
    s3_url, s3_seen = fake_s3
    secrets = Secrets(emu.token, emu.upload_url)
    inventory = write_inventory(tmp_path / "inv.csv", _rows(clip_factory, s3_url, tmp_path))
    s3_inventory = write_inventory(
        tmp_path / "s3.csv",
        [{"source": f"s3://media/v/c-{i}.mp4", "title": f"cli presigned {i}"} for i in range(2)],
    )
    ledger = str(tmp_path / "ledger.db")
    env = cli_env(emu, VIDEOFERRY_S3_ENDPOINT_URL=s3_url, PYTHONWARNINGS="always")
    emu_control.set_faults(emu, FAULTS, seed=9)
    common = ["--no-prefect", "--parent-id", emu.project_id, "--ledger", ledger]
    runs = [
        run_cli(["migrate", str(inventory), *common, "--report", str(tmp_path / "rep-a")], env, tmp_path),
        run_cli(
            ["migrate", str(s3_inventory), *common, "--via", "url", "--report", str(tmp_path / "rep-b")],
            env,
            tmp_path,
        ),
    ]
    emu_control.clear_faults(emu)
    assert [r.returncode for r in runs] == [1, 1], runs[0].stdout + runs[0].stderr  # missing file, dead URL
    runs.append(run_cli(["status", "--ledger", ledger], env, tmp_path))
    runs.append(run_cli(["status", "--ledger", ledger, "--json"], env, tmp_path))
    runs.append(run_cli(["report", "--ledger", ledger, "--out", str(tmp_path / "rep-c")], env, tmp_path))
    assert runs[-1].returncode == 0, runs[-1].stderr
    secrets.harvest(emu_control, emu, s3_seen)
    assert len(secrets.endpoints) >= 4 and len(secrets.presigned_queries) >= 2
    assert "retrying" in runs[0].stderr + runs[1].stderr  # the faults did bite
    texts: dict[str, str] = {}
    for number, run in enumerate(runs):
        texts[f"run {number} stdout"] = run.stdout
        texts[f"run {number} stderr"] = run.stderr
    for folder in ("rep-a", "rep-b", "rep-c"):
        texts.update(files_texts(tmp_path / folder))
    texts.update(ledger_texts(Path(ledger)))
    assert_clean(texts, secrets)


def test_the_search_finds_a_planted_secret(tmp_path: Path) -> None:
    secrets = Secrets("tok-123", "http://127.0.0.1:1", {"http://127.0.0.1:1/upload/s3cr3tpath"})
    with pytest.raises(AssertionError, match="endpoint secret"):
        assert_clean({"log": "PATCH to s3cr3tpath failed"}, secrets)
    with pytest.raises(AssertionError, match="marker"):
        assert_clean({"log": "fetching ?x-amz-signature=abc"}, secrets)
    assert_clean({"log": "header X-Amz-Security-Token: <redacted>"}, secrets)  # a name alone is no leak
    assert_clean({"log": "nothing to see"}, secrets)


def test_an_items_repr_hides_a_signed_source_query(tmp_path: Path) -> None:
    book = Ledger.open(tmp_path / "ledger.db")
    try:
        run = book.start_run("migrate", {})
        source = f"https://cdn.example/v.mp4?X-Amz-Signature={USER_QUERY_SECRET}"
        book.plan([spec("k", 1, source=source, parent_id=str(uuid4()), via="url")], run)
        item = book.get("k")
    finally:
        book.close()
    assert item is not None and USER_QUERY_SECRET not in repr(item)


def test_live_resources_leak_nothing(
    emu: Workspace, emu_control: EmulatorControl, caplog: pytest.LogCaptureFixture
) -> None:
    """DRM passwords, stream and restream keys, privacy_share secrets and links, unique codes and a signed
    poster URL stay out of logs, reprs and exceptions: through refusals, retried 5xx and lost answers."""
    from connectors.client.live_models import RestreamTarget
    from connectors.retry import RetryPolicy

    caplog.set_level(logging.DEBUG)
    secrets = Secrets(emu.token, emu.upload_url)
    drm_password, share_password, restream_key = "drm-pw-0Zk4-never", "share-pw-0Zk4-never", "rk-0Zk4-never"
    fast = RetryPolicy(max_attempts=4, initial_wait=0.01, max_wait=0.05)
    client = VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory(), retry=fast)
    found = {"drm password": drm_password, "share password": share_password, "restream key": restream_key}
    reprs: list[str] = [repr(client)]
    errors: list[str] = []

    def refused(call: Callable[[], object]) -> None:
        with pytest.raises(VideoApiError) as caught:
            call()
        errors.append(_exception_texts(caught.value))

    emu_control.set_faults(
        emu, [{"kind": "error", "status": 503, "method": "GET", "path": "^/v2/live/", "rate": 0.3}], seed=4
    )
    try:
        target = RestreamTarget("yt", "rtmp://a.example/live", restream_key)
        drm = client.drm.update(url="http://127.0.0.1:9/authorize", username="lic", password=drm_password)
        event = client.live_events.create(
            "show", "recurring", privacy_share={"link_hash": "Hs7k2Q"}, restreams=[target]
        )
        guarded = client.live_events.create("guarded", "one-time", privacy_share={"password": share_password})
        assert event.privacy_share is not None and event.privacy_share.link and event.streamkey
        found.update(
            {"streamkey": event.streamkey, "share link": event.privacy_share.link, "link hash": "Hs7k2Q"}
        )
        batch = client.unique_codes.create(event.id, "vip", 20)
        download = client.unique_codes.download(event.id, batch.id)
        found.update({f"code {i}": code.code for i, code in enumerate(download.codes)})
        client.live_events.enable(event.id)  # the ingest takes streams of enabled events only
        emu_control.broadcast(emu, event.id, seconds=5, chat_messages=3)
        stream = client.live_events.get(event.id).stream
        assert stream is not None
        reprs += [repr(drm), str(drm), repr(client.drm.get()), repr(event), str(guarded), repr(download)]
        reprs += [repr(download.codes), repr(client.restreams.list_restreams(event.id)), repr(batch)]
        reprs += [repr(list(client.live_events.iter_events())), repr(client.live_events.qos(event.id))]
        reprs.append(repr(client.live_events.chat(event.id, stream.id)))
        refused(lambda: client.drm.update(url="gopher://x", password=drm_password + "x"))
        refused(
            lambda: client.restreams.create(
                event.id, RestreamTarget("x", "http://x/" + restream_key, restream_key)
            )
        )
        refused(lambda: client.live_events.update(event.id, privacy_share={"password": share_password}))
        refused(lambda: client.posters.upload(event.id, f"http://127.0.0.1:9/p.png?sig={USER_QUERY_SECRET}"))
        emu_control.set_faults(emu, [{"kind": "drop_after_commit", "method": "POST", "path": "/restreams$"}])
        refused(lambda: client.restreams.create(event.id, target))  # made, answer lost: UnknownOutcomeError
    finally:
        emu_control.clear_faults(emu)
        client.close()
    ours = [r for r in caplog.records if not r.name.startswith(("emulator", "uvicorn"))]
    assert any("retrying" in r.getMessage() for r in ours)  # the 503s did bite
    texts = {
        "reprs": "\n".join(reprs),
        "errors": "\n".join(errors),
        "logs": "\n".join(f"{r.name} {r.levelname} {r.getMessage()} {r.exc_text or ''}" for r in ours),
    }
    assert_clean(texts, secrets)
    leaks = [
        f"{name} in {where}"
        for where, text in texts.items()
        for name, value in found.items()
        if value in text
    ]
    assert not leaks, leaks


@pytest.mark.flow
def test_credentials_blocks_leak_nothing(
    prefect_harness: None,
    tmp_path: Path,
    emu: Workspace,
    emu_control: EmulatorControl,
    clip_factory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A flow run whose token comes from a credentials block: the block's repr, what the UI reads of it, the
    run's parameters, logs, artifacts and events, and a block that cannot be read hold no token."""
    from prefect.client.orchestration import get_client

    from flows.migrate.flow import run_flow
    from tasks.service import service_settings
    from videoferry.blocks import VideoferryCredentials, VimeoCredentials

    for name in ("VIDEOFERRY_API_URL", "VIDEOFERRY_UPLOAD_URL", "VIDEOFERRY_TOKEN", "VIDEOFERRY_TOKEN_BLOCK"):
        monkeypatch.delenv(name, raising=False)
    block = VideoferryCredentials(token=SecretStr(emu.token), api_url=emu.base_url, upload_url=emu.upload_url)
    block.save("leak-check", overwrite=True)
    vimeo = VimeoCredentials(token=SecretStr(USER_QUERY_SECRET))
    vimeo.save("leak-check-vimeo", overwrite=True)
    texts = {"reprs": f"{block!r} {block} {vimeo!r} {vimeo}"}
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "leak-check-vimeo")  # the wrong kind: named, no token
    with pytest.raises(Exception) as wrong:
        service_settings()
    texts["wrong block"] = _exception_texts(wrong.value)
    monkeypatch.setenv("VIDEOFERRY_CREDENTIALS_BLOCK", "leak-check")
    rows = [{"source": str(clip_factory(0.5, name="b.mp4")), "title": "from a block"}]
    outcome = run_flow(options(write_inventory(tmp_path / "inv.csv", rows), emu, tmp_path))
    assert outcome.exit_code == 0, outcome.reasons
    texts["outcome"] = json.dumps(outcome.as_dict())
    with get_client(sync_client=True) as client:
        for slug, name in (
            ("videoferry-credentials", "leak-check"),
            ("videoferry-vimeo-credentials", "leak-check-vimeo"),
        ):
            document = client.read_block_document_by_name(name, slug, include_secrets=False)
            texts[f"block {name}"] = json.dumps(document.data, default=str)
        runs = client.read_flow_runs(limit=50)
        texts["parameters"] = json.dumps([run.parameters for run in runs], default=str)
        texts["logs"] = "\n".join(log.message for log in client.read_logs(limit=200))
        artifacts = client._client.post("/artifacts/filter", json={"limit": 50, "offset": 0}).json()
        texts["artifacts"] = json.dumps(artifacts)
        found = client._client.post("/events/filter", json={"filter": {"event": {"prefix": ["videoferry."]}}})
        texts["events"] = found.text
    assert_clean(texts, Secrets(emu.token, emu.upload_url))

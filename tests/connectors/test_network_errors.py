"""Network failures say what happened (host, refused / DNS / timeout / reset), retry lines too; the probe."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator

import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client import VideoClient
from videoferry.connectors.client.probe import ServiceUnreachableError, probe_service
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.config import ConfigError, Settings
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import CallKind, RetryPolicy
from videoferry.connectors.tus import TusError, TusUpload
from videoferry.emulator.control import EmulatorControl, Workspace

NO_WAIT = RetryPolicy(max_attempts=2, initial_wait=0, max_wait=0)
TOKEN = "tok-secret-4242"
SIGNED = "/upload/secret-endpoint-path?X-Signature=sig-secret"


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture()
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


@pytest.fixture()
def hangup_port() -> Iterator[int]:
    """A loopback port whose server reads the request and closes the connection without an answer."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    port = int(server.getsockname()[1])
    yield port
    stop.set()
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # wakes the accept() to see stop
    thread.join(timeout=10)
    server.close()


def transport(api_url: str, upload_url: str, *, timeout: float = 5.0) -> Transport:
    return Transport(
        api_url, upload_url, TOKEN, limiter=ApiRateLimiter.memory(), retry=NO_WAIT, timeout=timeout
    )


def failure_of(t: Transport, *, host: str = "api", path: str = "/v1/videos") -> E.TransportError:
    with t, pytest.raises(E.TransportError) as caught:
        t.call("GET", path, operation="list_videos", kind=CallKind.IDEMPOTENT, host=host)
    return caught.value


def assert_clean(text: str) -> None:
    for secret in (TOKEN, "secret-endpoint-path", "sig-secret", "X-Signature"):
        assert secret not in text


def test_connection_refused_names_the_host_and_the_setting(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="videoferry.connectors.retry")
    port = closed_port()
    err = failure_of(transport(f"http://127.0.0.1:{port}", "http://127.0.0.1:1"))
    assert err.message == f"connection refused by 127.0.0.1:{port} (is VIDEOFERRY_API_URL / --api-url right?)"
    assert (err.failure, err.host, err.sent) == ("refused", f"127.0.0.1:{port}", False)
    assert str(err).startswith(f"TransportError in list_videos: connection refused by 127.0.0.1:{port}")
    [line] = [r.getMessage() for r in caplog.records]
    assert line == (
        f"retrying list_videos: attempt 1 of 2 failed (connection refused by 127.0.0.1:{port} "
        "(is VIDEOFERRY_API_URL / --api-url right?)); next attempt in 0.0 s"
    )
    assert_clean(str(err) + caplog.text)


def test_an_unresolvable_upload_host_never_shows_the_path_or_query(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    err = failure_of(transport("http://127.0.0.1:1", "https://uploadd.invalid"), host="upload", path=SIGNED)
    assert (
        err.message == "cannot resolve host uploadd.invalid (is VIDEOFERRY_UPLOAD_URL / --upload-url right?)"
    )
    assert (err.failure, err.host) == ("dns", "uploadd.invalid:443")
    assert_clean(str(err) + repr(err) + caplog.text)


def test_a_silent_server_is_a_timeout_that_says_how_long(silent_port: int) -> None:
    err = failure_of(transport(f"http://127.0.0.1:{silent_port}", "http://127.0.0.1:1", timeout=0.3))
    assert err.message == f"no answer from 127.0.0.1:{silent_port} within 0.3 s"
    assert (err.failure, err.timed_out, err.sent) == ("timeout", True, True)


def test_a_hangup_is_said_plainly(hangup_port: int) -> None:
    err = failure_of(transport(f"http://127.0.0.1:{hangup_port}", "http://127.0.0.1:1"))
    assert err.message == f"127.0.0.1:{hangup_port} closed the connection without an answer"
    assert err.failure == "reset"


def test_a_create_whose_connection_broke_is_unknown_and_says_why(hangup_port: int) -> None:
    with transport(f"http://127.0.0.1:{hangup_port}", "http://127.0.0.1:1") as t:
        with pytest.raises(E.UnknownOutcomeError) as caught:
            t.call("POST", "/v2/init", operation="init_upload", kind=CallKind.CREATE, json_body={})
    assert caught.value.cause_kind == "connection"
    assert isinstance(caught.value.__cause__, E.TransportError)
    assert "closed the connection without an answer" in caught.value.__cause__.message


def test_http_failures_in_retry_lines_carry_status_code_and_request_id(
    emu: Workspace, emu_control: EmulatorControl, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="videoferry.connectors.retry")
    emu_control.set_faults(emu, [{"kind": "error", "status": 503, "method": "GET", "times": 1}])
    with VideoClient(
        emu.base_url, emu.upload_url, emu.token, limiter=ApiRateLimiter.memory(), retry=NO_WAIT
    ) as c:
        c.videos.list(project_id=emu.project_id)
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("retrying list_videos: attempt 1 of 2 failed (HTTP 503")
    assert "request id " in line and line.endswith("; next attempt in 0.0 s")
    assert "None" not in line


def settings(api_url: str, upload_url: str) -> Settings:
    return Settings(api_url=api_url, upload_url=upload_url, token=TOKEN)


def test_the_probe_passes_against_the_emulator(emu: Workspace) -> None:
    answers = probe_service(settings(emu.base_url, emu.upload_url))
    assert [(a.what, a.failure) for a in answers] == [("API", None), ("upload", None)]
    assert all(a.status is not None for a in answers)  # any HTTP answer counts, whatever its status


def test_the_probe_names_every_address_that_does_not_answer(emu: Workspace) -> None:
    port = closed_port()
    with pytest.raises(ServiceUnreachableError) as caught:
        probe_service(settings(f"http://127.0.0.1:{port}", emu.upload_url))
    assert isinstance(caught.value, ConfigError), "the jobs turn a ConfigError into exit 2"
    assert str(caught.value) == (
        f"the API address http://127.0.0.1:{port} does not answer: connection refused by 127.0.0.1:{port}; "
        "check VIDEOFERRY_API_URL / --api-url"
    )
    with pytest.raises(ServiceUnreachableError) as caught:
        probe_service(settings(emu.base_url, "https://user:pw@uploadd.invalid/base?sig=sig-secret"))
    assert str(caught.value) == (
        "the upload address https://uploadd.invalid/base does not answer: "
        "cannot resolve host uploadd.invalid; check VIDEOFERRY_UPLOAD_URL / --upload-url"
    )
    assert "pw@" not in str(caught.value) and "sig-secret" not in str(caught.value)
    with pytest.raises(ServiceUnreachableError) as caught:
        probe_service(settings(f"http://127.0.0.1:{port}", "http://apii.invalid"))
    assert [a.what for a in caught.value.answers if a.failure] == ["API", "upload"]


def test_the_probe_is_bounded_by_its_timeout(silent_port: int, emu: Workspace) -> None:
    with pytest.raises(
        ServiceUnreachableError, match=rf"no answer from 127.0.0.1:{silent_port} within 0.2 s"
    ):
        probe_service(settings(f"http://127.0.0.1:{silent_port}", emu.upload_url), timeout=0.2)


def test_a_tus_upload_to_a_dead_host_says_what_failed_and_never_the_endpoint() -> None:
    port = closed_port()
    with TusUpload(max_attempts=1) as uploader, pytest.raises(TusError) as caught:
        uploader.server_status(f"http://127.0.0.1:{port}{SIGNED}")
    assert str(caught.value) == (
        f"TusError in tus_upload: upload endpoint: HEAD failed (connection refused by 127.0.0.1:{port})"
    )
    assert_clean(str(caught.value))

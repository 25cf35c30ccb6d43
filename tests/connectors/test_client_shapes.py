"""Answers no emulator variant gives (unordered or repeated pages, thin list items, both methods refused).

A small scripted service on loopback: each test says what every request is answered with.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from videoferry.connectors.client import VideoClient
from videoferry.connectors.errors import MethodNotAllowedError
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy

#: (method, path, query) -> (status, JSON body or None for an empty body)
Script = Callable[[str, str, dict[str, str]], tuple[int, Any]]

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def _id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _video(n: int, **fields: Any) -> dict[str, Any]:
    created = (T0 + timedelta(minutes=n)).isoformat().replace("+00:00", "Z")
    return {"id": _id(n), "title": f"v{n}", "project_id": _id(900), "created_at": created, **fields}


class _Service:
    def __init__(self) -> None:
        self.script: Script = lambda method, path, query: (404, {"error": {"code": 400404}})
        self.seen: list[tuple[str, str, dict[str, str]]] = []


@pytest.fixture()
def service() -> Iterator[tuple[_Service, str]]:
    state = _Service()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            state.seen.append((self.command, url.path, query))
            status, body = state.script(self.command, url.path, query)
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def client(service: tuple[_Service, str]) -> Iterator[VideoClient]:
    _, url = service
    limiter = ApiRateLimiter.memory(per_second=1000, per_minute=100000)
    retry = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.02)
    with VideoClient(url, url, "token", limiter=limiter, retry=retry) as c:
        yield c
    limiter.close()


def _pages(videos: list[dict[str, Any]], size: int) -> Script:
    """A list that pages `videos` as given (whatever order is asked), no total."""

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if path == "/v1/videos":
            page = int(query.get("page", "1"))
            items = videos[(page - 1) * size : page * size]
            return 200, {"meta": {"pagination": {"page": page, "per_page": size}}, "data": items}
        found = [v for v in videos if path == f"/v1/videos/{v['id']}"]
        return (200, {"data": found[0]}) if found else (404, {"error": {"code": 400404}})

    return answer


def test_a_list_not_ordered_newest_first_is_read_to_the_end(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    state.script = _pages([_video(n) for n in range(12)], size=5)  # oldest first, whatever was asked
    found = list(client.videos.scan(newer_than=T0 + timedelta(minutes=8)))
    assert [v.title for v in found] == ["v8", "v9", "v10", "v11"]
    assert [q["page"] for _, p, q in state.seen if p == "/v1/videos"] == ["1", "2", "3"]


def test_fields_the_list_leaves_out_are_read_before_judging(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    full = [_video(n, project_id=_id(900 + n % 2)) for n in range(4)]
    thin = [{"id": v["id"], "created_at": v["created_at"]} for v in full]
    listing = _pages(thin[::-1], size=10)
    state.script = lambda m, p, q: listing(m, p, q) if p == "/v1/videos" else _pages(full, 10)(m, p, q)
    found = list(client.videos.scan(project_id=_id(901).replace("-", "").upper(), title="v3"))
    assert [v.id for v in found] == [_id(3)]
    assert len([p for _, p, _ in state.seen if p != "/v1/videos"]) == 4  # one GET per thin item


def test_a_server_that_ignores_the_page_number_does_not_loop(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    first = [_video(n) for n in range(5)]
    state.script = lambda m, p, q: (200, {"meta": {"pagination": {"per_page": 5}}, "data": first})
    assert [v.title for v in client.videos.iter()] == [f"v{n}" for n in range(5)]
    assert len(state.seen) == 2


def test_update_and_chapters_without_a_body_read_the_video(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    stored = _video(1, chapters={"items": [{"time": 1500, "title": "One"}], "enabled": True})

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, Any]:
        return (200, {"data": stored}) if method == "GET" else (200, None)

    state.script = answer
    assert client.videos.update(_id(1), title="v1").title == "v1"
    assert client.videos.set_chapters(_id(1), [(1.5, "One")]).items[0].time == 1500
    assert [m for m, _, _ in state.seen] == ["PATCH", "GET", "PUT", "GET"]


def test_a_create_answer_that_is_not_a_video_but_names_one_is_read(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    copy = _video(2)

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"data": copy}
        return 200, {"data": {"id": copy["id"].replace("-", ""), "assets": "not a list"}}

    state.script = answer
    assert client.videos.copy(_id(1)).id == _id(2)


def test_both_methods_refused_is_an_error_and_teaches_nothing(
    service: tuple[_Service, str], client: VideoClient
) -> None:
    state, _ = service
    state.script = lambda m, p, q: (405, {"error": {"code": 400405, "message": "method not allowed"}})
    with pytest.raises(MethodNotAllowedError):
        client.videos.move(_id(1), _id(900))
    assert [m for m, _, _ in state.seen] == ["POST", "PUT"]
    assert client.methods()["move_video"] == "POST"
    with pytest.raises(MethodNotAllowedError):
        client.videos.get(_id(1))  # the spec shows GET: no other method is tried
    assert len(state.seen) == 3

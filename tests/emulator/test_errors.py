"""Auth (section 5) and error bodies (section 7): codes, shapes and the X-Request-ID rule."""

from __future__ import annotations

import uuid

import httpx

from videoferry.emulator.control import EmulatorControl, Workspace


def _error(response: httpx.Response) -> dict:
    return dict(response.json()["error"])


def test_missing_authorization_is_400_100101(ws: Workspace) -> None:
    for url in (f"{ws.base_url}/v1/videos", f"{ws.upload_url}/v2/init", f"{ws.upload_url}/v2/video"):
        response = httpx.request("GET" if "videos" in url else "POST", url)
        assert response.status_code == 400
        assert _error(response)["code"] == 100101
        assert "www-authenticate" not in response.headers
        assert "x-request-id" in response.headers


def test_unknown_token_is_401_100102(ws: Workspace) -> None:
    for header in ("Bearer nope", "nope", ""):
        response = httpx.get(f"{ws.base_url}/v1/videos", headers={"Authorization": header})
        assert response.status_code == 401
        assert _error(response)["code"] == 100102
        assert "x-request-id" in response.headers


def test_bare_token_and_bearer_both_work(ws: Workspace) -> None:
    for header in (ws.token, f"Bearer {ws.token}", f"bearer {ws.token}"):
        assert httpx.get(f"{ws.base_url}/v1/videos", headers={"Authorization": header}).status_code == 200


def test_workspaces_are_isolated(emu_control: EmulatorControl, api: httpx.Client, done_video: dict) -> None:
    other = emu_control.create_workspace(rate_per_second=1000, rate_per_minute=100000)
    with httpx.Client(base_url=other.base_url, headers=other.headers) as intruder:
        video_id = done_video["id"]
        assert intruder.get("/v1/videos").json()["meta"]["pagination"]["total"] == 0
        for method, path, body in (
            ("GET", f"/v1/videos/{video_id}", None),
            ("PATCH", f"/v1/videos/{video_id}", {"title": "x"}),
            ("DELETE", f"/v1/videos/{video_id}", None),
            ("POST", f"/v1/videos/{video_id}/copy", {}),
        ):
            response = intruder.request(method, path, json=body)
            assert response.status_code == 401, (method, path)  # spec 5.2: another workspace's token
            assert _error(response)["code"] == 100102
        moved = intruder.post(f"/v1/videos/{video_id}/move", json={"project_id": other.project_id})
        assert moved.status_code == 401
        copy_into_other = api.post(f"/v1/videos/{video_id}/copy", json={"parent_id": other.project_id})
        assert _error(copy_into_other)["code"] == 100102
        missing = intruder.get(f"/v1/videos/{uuid.uuid4()}")  # nobody's: still missing
        assert missing.status_code == 404 and _error(missing)["code"] == 400404
    assert api.get(f"/v1/videos/{done_video['id']}").json()["data"]["title"] == "base"


def test_404_and_405_carry_no_request_id(api: httpx.Client) -> None:
    missing = api.get(f"/v1/videos/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert _error(missing)["code"] == 400404
    assert "x-request-id" not in missing.headers
    unknown_path = api.get("/v1/nothing-here")
    assert unknown_path.status_code == 404 and "x-request-id" not in unknown_path.headers
    for method, path in (
        ("POST", "/v1/videos"),
        ("PUT", f"/v1/videos/{uuid.uuid4()}"),
        ("GET", f"/v1/videos/{uuid.uuid4()}/copy"),
        ("POST", f"/v1/videos/{uuid.uuid4()}/chapters"),
    ):
        response = api.request(method, path)
        assert response.status_code == 405, (method, path)
        assert _error(response)["code"] == 400405
        assert "x-request-id" not in response.headers


def test_405_is_answered_before_auth(ws: Workspace) -> None:
    response = httpx.delete(f"{ws.base_url}/v1/videos")
    assert response.status_code == 405


def test_empty_and_truncated_bodies_are_code_1(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}"
    for body in (b"", b"   ", b'{"title": "ab', b'{"title": "ab",', b"{", b'{"title"'):
        response = api.patch(path, content=body, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, body
        assert _error(response)["code"] == 1, body
        assert _error(response)["message"] == "io error"


def test_json_syntax_error_is_400101_with_detail(api: httpx.Client, done_video: dict) -> None:
    response = api.patch(f"/v1/videos/{done_video['id']}", content=b'{"title": x}')
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == 400101
    assert "x" in error["detail"]
    trailing = api.patch(f"/v1/videos/{done_video['id']}", content=b'{"title": "a"} junk')
    assert _error(trailing)["code"] == 400101


def test_type_errors_are_400102(api: httpx.Client, done_video: dict) -> None:
    path = f"/v1/videos/{done_video['id']}"
    for body in ({"title": 5}, {"tags": "a"}, {"tags": [1]}, {"additional_materials_enabled": "yes"}):
        response = api.patch(path, json=body)
        assert response.status_code == 400, body
        assert _error(response)["code"] == 400102, body
    not_object = api.patch(path, json=[1, 2])
    assert _error(not_object)["code"] == 400102
    chapters = api.put(f"{path}/chapters", json={"items": [{"time": 1.5, "title": "a"}]})
    assert _error(chapters)["code"] == 400102


def test_validation_error_lists_every_field(up: httpx.Client) -> None:
    response = up.post("/v2/init", json={"type": "video"})
    assert response.status_code == 400
    error = _error(response)
    assert error["code"] == 400400
    params = error["invalid_params"]
    assert {p["name"] for p in params} == {"parent_id", "title"}  # filesize only for tus
    assert [p["index"] for p in params] == list(range(len(params)))
    for p in params:
        assert set(p) == {"index", "name", "reason", "message"}
    oneof = _error(up.post("/v2/init", json={"type": "film", "filesize": 1}))["invalid_params"]
    assert oneof == [{"index": 0, "name": "type", "reason": "oneof", "message": "video attachment replace"}]


def test_server_error_body_carries_path_and_timestamp(api: httpx.Client) -> None:
    response = api.get("/v1/videos", params={"page": 0})
    assert response.status_code == 500
    error = _error(response)
    assert error["code"] == 500500
    assert error["path"] == "/v1/videos"
    assert error["timestamp"].endswith("Z") and "." in error["timestamp"]
    assert "detail" not in error
    assert "x-request-id" in response.headers


def test_success_carries_request_id(api: httpx.Client) -> None:
    first = api.get("/v1/videos")
    second = api.get("/v1/videos")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]

"""Privacy domains (4.4): create, list with offset / limit meta, update, archive, delete, media_count."""

from __future__ import annotations

import uuid

import httpx
import pytest

from videoferry.emulator.control import Workspace


def _create(api: httpx.Client, domain: str) -> dict:
    answer = api.post("/v1/privacy-domains", json={"domain": domain})
    assert answer.status_code == 201, answer.text
    return dict(answer.json()["data"])


def test_create_fields_and_wildcards(api: httpx.Client, ws: Workspace) -> None:
    item = _create(api, "Example.COM")
    assert item["domain"] == "example.com"
    assert item["workspace_id"] == ws.workspace_id
    assert item["created_by_user_name"]
    assert item["created_at"] and item["updated_at"] is None and item["archived_at"] is None
    assert item["media_count"] == 0
    assert _create(api, "*.example.com")["domain"] == "*.example.com"


@pytest.mark.parametrize(
    "domain", ["", "nodot", "bad_host.com", "-a.com", "a..com", "http://a.com", "*.", "a.*.com"]
)
def test_invalid_host_names(api: httpx.Client, domain: str) -> None:
    answer = api.post("/v1/privacy-domains", json={"domain": domain})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == 400400
    assert error["invalid_params"][0]["name"] == "domain"


def test_required_and_duplicate(api: httpx.Client) -> None:
    assert (
        api.post("/v1/privacy-domains", json={}).json()["error"]["invalid_params"][0]["reason"] == "required"
    )
    _create(api, "dup.example")
    answer = api.post("/v1/privacy-domains", json={"domain": "dup.example"})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == 400201


def test_list_meta_paging_and_filters(api: httpx.Client, ws: Workspace) -> None:
    made = [_create(api, f"d{i}.example.org") for i in range(3)]
    page = api.get("/v1/privacy-domains", params={"offset": 1, "limit": 1}).json()
    assert page["meta"] == {
        "offset": 1,
        "limit": 1,
        "total": 1,
        "total_count": 3,
        "order": {"created_at": "desc"},
        "parent_id": ws.workspace_id,
    }
    assert [d["id"] for d in page["data"]] == [made[1]["id"]]
    asc = api.get("/v1/privacy-domains", params={"order": "domain.asc"}).json()["data"]
    assert [d["domain"] for d in asc] == ["d0.example.org", "d1.example.org", "d2.example.org"]
    api.put(f"/v1/privacy-domains/{made[0]['id']}", json={"archived": True})
    archived = api.get("/v1/privacy-domains", params={"archived": "true"}).json()
    assert [d["id"] for d in archived["data"]] == [made[0]["id"]]
    assert api.get("/v1/privacy-domains", params={"archived": "false"}).json()["meta"]["total_count"] == 2
    assert api.get("/v1/privacy-domains", params={"limit": 101}).json()["error"]["code"] == 400400
    assert api.get("/v1/privacy-domains", params={"order": "domain.DESC"}).json()["error"]["code"] == 400216


def test_update_archive_and_delete(api: httpx.Client) -> None:
    item = _create(api, "old.example")
    answer = api.put(f"/v1/privacy-domains/{item['id']}", json={"domain": "new.example"})
    data = answer.json()["data"]
    assert (data["domain"], data["archived_at"]) == ("new.example", None)
    assert data["updated_at"] is not None
    archived = api.put(f"/v1/privacy-domains/{item['id']}", json={"archived": True}).json()["data"]
    assert archived["archived_at"] is not None and archived["domain"] == "new.example"
    restored = api.put(f"/v1/privacy-domains/{item['id']}", json={"archived": False}).json()["data"]
    assert restored["archived_at"] is None
    bad = api.put(f"/v1/privacy-domains/{item['id']}", json={"domain": "no spaces.com"})
    assert bad.json()["error"]["invalid_params"][0]["name"] == "domain"
    assert api.delete(f"/v1/privacy-domains/{item['id']}").json() == {"data": {"success": True}}
    assert api.delete(f"/v1/privacy-domains/{item['id']}").status_code == 404
    assert api.put(f"/v1/privacy-domains/{uuid.uuid4()}", json={"archived": True}).status_code == 404


def test_media_count_counts_videos_naming_the_domain(
    api: httpx.Client, up: httpx.Client, ws: Workspace
) -> None:
    item = _create(api, "player.example")
    for title in ("a", "b"):
        init = up.post(
            "/v2/init", json={"type": "video", "parent_id": ws.project_id, "title": title, "filesize": 1}
        )
        video_id = init.json()["data"]["id"]
        changed = api.patch(
            f"/v1/videos/{video_id}",
            json={"privacy_type": "custom", "privacy_domains": ["player.example", "other.example"]},
        )
        assert changed.status_code == 200, changed.text
    listed = api.get("/v1/privacy-domains").json()["data"]
    assert [d["media_count"] for d in listed if d["id"] == item["id"]] == [2]

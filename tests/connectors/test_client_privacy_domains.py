"""PrivacyDomains against the emulator (4.4): create, the offset/limit list and its walk, update, delete."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from videoferry.connectors import errors as E
from videoferry.connectors.client.privacy_domains import PrivacyDomains
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.ids import to_base58
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.retry import RetryPolicy
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=3, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def ws(emu_control: EmulatorControl) -> Workspace:
    return emu_control.create_workspace(rate_per_second=10_000, rate_per_minute=1_000_000)


@pytest.fixture()
def domains(ws: Workspace) -> Iterator[PrivacyDomains]:
    limiter = ApiRateLimiter.memory(10_000, 1_000_000)
    transport = Transport(ws.base_url, ws.upload_url, ws.token, limiter=limiter, retry=FAST)
    yield PrivacyDomains(transport)
    transport.close()


def test_create_wildcard_and_refusals(domains: PrivacyDomains, ws: Workspace) -> None:
    made = domains.create("Example.COM")
    assert made.domain == "example.com" and made.workspace_id == ws.workspace_id
    assert made.media_count == 0 and made.archived is False and made.created_by_user_name
    wild = domains.create("*.cdn.example.org")
    assert wild.domain == "*.cdn.example.org"
    with pytest.raises(E.AlreadyTakenError) as taken:
        domains.create("example.com")
    assert taken.value.code == 400201
    for bad in ("localhost", "exa mple.com", "http://example.com", "1.2.3.4"):
        with pytest.raises(E.ValidationError) as invalid:
            domains.create(bad)
        assert [p["name"] for p in invalid.value.invalid_params] == ["domain"]
    with pytest.raises(ValueError):
        domains.create(" ")
    assert domains.ensure("example.com").id == made.id  # found, not made again
    fresh = domains.ensure("new.example.net")
    assert fresh.domain == "new.example.net" and domains.find("NEW.example.net") == fresh


def test_list_meta_pages_filters_and_order(domains: PrivacyDomains, ws: Workspace) -> None:
    names = [f"site{i}.example.com" for i in range(7)]
    for name in names:
        domains.create(name)
    page = domains.list_domains(offset=2, limit=3, order="domain.asc")
    assert [d.domain for d in page.items] == sorted(names)[2:5]
    assert page.offset == 2 and page.limit == 3 and page.total == 3 and page.total_count == 7
    assert page.order == {"domain": "asc"} and page.parent_id == ws.workspace_id
    walked = [d.domain for d in domains.iter_domains(limit=2, order="domain.desc")]
    assert walked == sorted(names, reverse=True)
    assert [d.domain for d in domains.iter_domains(domain="site3.example.com")] == ["site3.example.com"]
    assert domains.find("missing.example.com") is None
    with pytest.raises(E.OrderFieldError):
        domains.list_domains(order="media_count.asc")
    with pytest.raises(E.ValidationError):
        domains.list_domains(limit=0)


def test_update_archive_restore_delete(domains: PrivacyDomains) -> None:
    item = domains.create("old.example.com")
    other = domains.create("other.example.com")
    renamed = domains.update(to_base58(item.id), domain="new.example.com")
    assert renamed.id == item.id and renamed.domain == "new.example.com" and renamed.updated_at is not None
    archived = domains.archive(item.id)
    assert archived.archived and archived.domain == "new.example.com"
    assert [d.id for d in domains.iter_domains(archived=True)] == [item.id]
    assert [d.id for d in domains.iter_domains(archived=False)] == [other.id]
    assert domains.restore(item.id).archived is False
    with pytest.raises(E.AlreadyTakenError):
        domains.update(item.id, domain="other.example.com")
    with pytest.raises(ValueError):
        domains.update(item.id)
    domains.delete(item.id)
    with pytest.raises(E.NotFoundError):
        domains.update(item.id, archived=True)
    with pytest.raises(E.NotFoundError):
        domains.delete(item.id)
    with pytest.raises(E.InvalidIdentifierError):
        domains.delete("not-an-id")
    assert [d.id for d in domains.iter_domains()] == [other.id]


def test_media_count_counts_videos_naming_the_domain(
    domains: PrivacyDomains, ws: Workspace, sample_clip: Path
) -> None:
    item = domains.create("player.example.com")
    headers = {**ws.headers, "X-Parent-ID": ws.project_id, "X-Video-Title": "v", "Content-Type": "video/mp4"}
    answer = httpx.post(f"{ws.upload_url}/v2/video", content=sample_clip.read_bytes(), headers=headers)
    video_id = answer.json()["data"]["id"]
    update = {"privacy_type": "custom", "privacy_domains": ["player.example.com"]}
    assert httpx.patch(f"{ws.base_url}/v1/videos/{video_id}", json=update, headers=ws.headers).is_success
    found = domains.find("player.example.com")
    assert found is not None and found.id == item.id and found.media_count == 1


def test_a_lost_create_answer_is_resolved_by_ensure(
    domains: PrivacyDomains, ws: Workspace, emu_control: EmulatorControl
) -> None:
    rule = {"kind": "drop_after_commit", "method": "POST", "path": "^/v1/privacy-domains$", "times": 1}
    emu_control.set_faults(ws, [rule])
    try:
        with pytest.raises(E.UnknownOutcomeError) as lost:
            domains.create("lost.example.com")  # made, but the answer never came: not repeated
        assert lost.value.cause_kind == "connection"
        emu_control.set_faults(ws, [{**rule, "times": 1}])
        found = domains.ensure("lost.example.com")  # listed: not created again
        assert found.domain == "lost.example.com"
        made = domains.ensure("fresh.example.com")  # not listed; its create answer is lost, then found
        assert made.domain == "fresh.example.com"
    finally:
        emu_control.clear_faults(ws)
    assert sorted(d.domain or "" for d in domains.iter_domains()) == ["fresh.example.com", "lost.example.com"]

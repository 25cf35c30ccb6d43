"""VideoClient against the emulator: every videos endpoint (4.1), errors from real answers, auth failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.connectors.waiting import wait_terminal
from videoferry.connectors import error_table as T
from videoferry.connectors import errors as E
from videoferry.connectors.client import VideoClient
from videoferry.connectors.limiter import ApiRateLimiter
from videoferry.connectors.models import Video
from videoferry.connectors.retry import RetryPolicy
from videoferry.connectors.sources import LocalFileSource
from videoferry.emulator.control import EmulatorControl, Workspace

FAST = RetryPolicy(max_attempts=5, initial_wait=0.01, max_wait=0.05)


@pytest.fixture()
def client(emu: Workspace) -> Iterator[VideoClient]:
    limiter = ApiRateLimiter.memory()
    with VideoClient(emu.base_url, emu.upload_url, emu.token, limiter=limiter, retry=FAST) as c:
        yield c
    limiter.close()



def upload(client: VideoClient, emu: Workspace, clip: Path, title: str, parent: str | None = None) -> Video:
    result = client.uploads.single(
        parent_id=parent or emu.project_id, title=title, source=LocalFileSource(clip)
    )
    video = wait_terminal(client, result.id)
    assert video.status == "done"
    return video


def test_list_filters_order_and_pagination(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    names = ["delta", "bravo", "echo", "alpha", "charlie"]  # neither creation order nor its reverse
    ids = [upload(client, emu, sample_clip, name).id for name in names]
    page = client.videos.list(project_id=emu.project_id, per_page=2, page=1)
    assert len(page.items) == 2
    assert page.pagination.total == 5 and page.pagination.per_page == 2 and page.pagination.page == 1
    assert page.order == {"created_at": "desc"}
    assert page.items[0].id == ids[-1]  # default order: newest first
    seen = [v.id for v in client.videos.iter(project_id=emu.project_id, per_page=2)]
    assert sorted(seen) == sorted(ids) and len(seen) == 5
    titles = [v.title for v in client.videos.iter(project_id=emu.project_id, order="title.asc", per_page=2)]
    assert titles == sorted(names)
    desc = client.videos.list(order="title.desc", per_page=100)
    assert [v.title for v in desc.items] == sorted(names, reverse=True)
    only = client.videos.list(title="alpha")
    assert [v.id for v in only.items] == [ids[3]]
    assert client.videos.list(folder_id=emu.folder_id).items == []


def test_list_errors_from_real_answers(client: VideoClient) -> None:
    with pytest.raises(E.OrderFieldError) as bad_dir:
        client.videos.list(order="title.DESC")
    assert bad_dir.value.code == 400216 and bad_dir.value.status == 400 and bad_dir.value.request_id
    with pytest.raises(E.OrderFieldError):
        client.videos.list(order="bogus.asc")
    with pytest.raises(E.ValidationError) as bad_page:
        client.videos.list(per_page=101)
    assert bad_page.value.code == 400400
    before = client.transport.limiter.stats.acquired
    with pytest.raises(E.InternalServerError) as page0:
        client.videos.list(page=0)
    assert page0.value.code == 500500 and page0.value.retryable
    assert client.transport.limiter.stats.acquired - before == 5  # idempotent: five attempts, then the error


def test_get_update_and_unknown_fields(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    video = upload(client, emu, sample_clip, "original")
    got = client.videos.get(video.id)
    assert got.id == video.id and got.project_id == emu.project_id
    assert got.duration and got.duration > 1.5
    assert got.assets and got.assets[0].file_size
    updated = client.videos.update(
        video.id, title="Новое имя 東京 🎬", description="опис", tags=["a", "b"], privacy_type="nowhere"
    )
    assert updated.title == "Новое имя 東京 🎬"
    again = client.videos.get(video.id)
    assert (again.title, again.description, again.tags, again.privacy_type) == (
        "Новое имя 東京 🎬",
        "опис",
        ["a", "b"],
        "nowhere",
    )
    assert again.updated_at is not None
    # Fields the model does not declare are kept.
    raw = httpx.get(f"{emu.base_url}/v1/videos/{video.id}", headers={"Authorization": emu.token}).json()[
        "data"
    ]
    undeclared = set(raw) - set(Video.model_fields)
    assert undeclared <= set(again.model_extra or {})
    with pytest.raises(ValueError):
        client.videos.update(video.id)


def test_identifier_errors(client: VideoClient) -> None:
    with pytest.raises(E.NotFoundError) as missing:
        client.videos.get("5b2f4a0e-8f0c-4a4e-9a57-3f6f0f7d6c11")
    assert missing.value.code == 400404 and missing.value.status == 404
    with pytest.raises(E.InvalidIdentifierError) as bad:
        client.videos.get("not-an-id")
    assert bad.value.code == 400301
    with pytest.raises(E.InvalidBase58Error) as b58:
        client.videos.get("OOOOOOOOOOOOOOOOOOOOOO")
    assert b58.value.code == 400302


def test_delete_and_delete_again(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    video = upload(client, emu, sample_clip, "doomed")
    client.videos.delete(video.id)
    with pytest.raises(E.NotFoundError):
        client.videos.get(video.id)
    with pytest.raises(E.NotFoundError):  # a first-attempt 404 is an error
        client.videos.delete(video.id)


def test_delete_retried_after_lost_answer_counts_as_done(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = upload(client, emu, sample_clip, "doomed twice")
    emu_control.set_faults(emu, [{"kind": "drop_after_commit", "method": "DELETE", "times": 1}])
    client.videos.delete(video.id)  # attempt 1 deleted it but the answer was lost; attempt 2 gets 404
    deletes = [r for r in emu_control.requests(emu.workspace_id) if r["method"] == "DELETE"]
    assert len(deletes) == 2
    assert not any(v["id"] == video.id for v in emu_control.videos(emu))


def test_copy_move_and_folder_errors(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = upload(client, emu, sample_clip, "source")
    copy = client.videos.copy(video.id)
    assert copy.id != video.id and copy.title == "source"
    other_project, other_folder = emu_control.create_project(emu)
    copy2 = client.videos.copy(video.id, parent_id=other_folder)
    assert copy2.project_id == other_project and copy2.folder_id == other_folder
    with pytest.raises(E.FolderNotFoundError) as bad:
        client.videos.copy(video.id, parent_id="5b2f4a0e-8f0c-4a4e-9a57-3f6f0f7d6c11")
    assert bad.value.code == 400236
    moved = client.videos.move(video.id, other_project, other_folder)
    assert moved.id == video.id and moved.project_id == other_project and moved.folder_id == other_folder
    assert client.videos.get(video.id).project_id == other_project


def test_cut_trims_in_place(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    video = upload(client, emu, sample_clip, "to trim")
    assert video.duration is not None and video.version is not None
    cut = client.videos.cut(video.id, trim=[(0.5, 1.0)], title="trimmed")
    assert cut.id == video.id
    done = wait_terminal(client, video.id)
    assert done.status == "done" and done.title == "trimmed"
    assert done.version is not None and done.version > video.version
    assert done.duration is not None and done.duration < video.duration - 0.5
    cropped = client.videos.cut(video.id, crop={"w": 80, "h": 60, "x": 0, "y": 0})
    assert cropped.id == video.id


def test_concat_creates_a_new_video(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    a = upload(client, emu, sample_clip, "a")
    b = upload(client, emu, sample_clip, "b")
    joined = client.videos.concat(a.id, append=[b.id])
    assert joined.id not in (a.id, b.id)
    done = wait_terminal(client, joined.id)
    assert done.duration is not None and a.duration is not None and b.duration is not None
    assert done.duration > a.duration + b.duration - 0.5
    assert client.videos.get(a.id).duration == a.duration  # the source is unchanged
    with pytest.raises(ValueError):
        client.videos.concat(a.id)


def test_chapters_seconds_become_milliseconds(client: VideoClient, emu: Workspace, sample_clip: Path) -> None:
    video = upload(client, emu, sample_clip, "chaptered")
    chapters = client.videos.set_chapters(
        video.id, [(0, "Intro"), (10.5, "Главная часть"), {"time": 61.25, "title": "End"}]
    )
    assert [(c.time, c.title) for c in chapters.items] == [
        (0, "Intro"),
        (10500, "Главная часть"),
        (61250, "End"),
    ]
    assert chapters.enabled is True
    assert chapters.items[1].seconds == 10.5
    got = client.videos.get(video.id)
    assert got.chapters is not None and [c.time for c in got.chapters.items] == [0, 10500, 61250]
    cleared = client.videos.set_chapters(video.id, [], enabled=False)
    assert cleared.items == [] and cleared.enabled is False
    with pytest.raises(ValueError):
        client.videos.set_chapters(video.id, [(-1, "bad")])


def test_auth_errors_are_recognisable(emu: Workspace, emu_control: EmulatorControl) -> None:
    with VideoClient(
        emu.base_url, emu.upload_url, "wrong-token", limiter=ApiRateLimiter.memory(), retry=FAST
    ) as bad:
        with pytest.raises(E.AuthError) as info:
            bad.videos.list()
    err = info.value
    assert isinstance(err, E.UnauthorizedError) and err.code == 100102 and err.status == 401
    assert "VIDEOFERRY_TOKEN" in str(err) and "wrong-token" not in str(err)
    # Without an Authorization header (the client always sends one): 400 with 100101.
    response = httpx.get(f"{emu.base_url}/v1/videos")
    missing = T.error_from_response(response)
    assert isinstance(missing, E.MissingAuthorizationError) and isinstance(missing, E.AuthError)
    assert missing.status == 400 and missing.code == 100101
    # 405 with 400405 from a method the emulator does not serve on the path.
    response = httpx.put(f"{emu.base_url}/v1/videos", headers={"Authorization": emu.token}, json={})
    assert isinstance(T.error_from_response(response), E.MethodNotAllowedError)


def test_token_of_another_workspace_is_unauthorized(
    client: VideoClient, emu: Workspace, emu_control: EmulatorControl, sample_clip: Path
) -> None:
    video = upload(client, emu, sample_clip, "private")
    other = emu_control.create_workspace()
    with VideoClient(
        other.base_url, other.upload_url, other.token, limiter=ApiRateLimiter.memory()
    ) as foreign:
        with pytest.raises((E.UnauthorizedError, E.NotFoundError)) as info:
            foreign.videos.get(video.id)
    assert not info.value.retryable

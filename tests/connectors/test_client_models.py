"""Response models: missing optional fields tolerated, unknown fields kept, secrets out of repr."""

from __future__ import annotations

from videoferry.connectors.ids import to_base58
from videoferry.connectors.models import Chapters, UploadResult, UploadSession, Video, VideoPage


def test_minimal_video_and_unknown_fields() -> None:
    video = Video.model_validate({"id": "abc", "brand_new_field": {"x": 1}, "status": "processing"})
    assert video.id == "abc" and video.title is None and video.assets is None
    assert video.model_extra == {"brand_new_field": {"x": 1}}
    assert not video.is_terminal
    assert Video.model_validate({"id": "a", "status": "aborted"}).is_terminal
    assert video.model_dump()["brand_new_field"] == {"x": 1}


def test_timestamps_null_or_empty_become_none() -> None:
    video = Video.model_validate(
        {"id": "a", "created_at": "2026-01-02T03:04:05.123456Z", "updated_at": None, "deleted_at": ""}
    )
    assert video.created_at is not None and video.created_at.microsecond == 123456
    assert video.updated_at is None and video.deleted_at is None


def test_nested_models_keep_extras_too() -> None:
    video = Video.model_validate(
        {
            "id": "a",
            "version": 2,
            "assets": [{"id": "s", "quality": "original", "file_size": 10, "codec": "h264"}],
            "chapters": {"items": [{"time": 10000, "title": "t"}], "enabled": True, "show_on_load": False},
            "poster": None,
            "meta": {"event_id": "e", "stream_id": "s"},
        }
    )
    assert video.assets is not None and video.assets[0].model_extra == {"codec": "h264"}
    assert video.chapters is not None and video.chapters.items[0].seconds == 10.0
    chapters = Chapters.model_validate({"items": []})
    assert chapters.items == [] and chapters.enabled is None


def test_page_session_and_result() -> None:
    page = VideoPage.model_validate({"items": [{"id": "a"}]})
    assert page.pagination.total is None and page.order == {}
    session = UploadSession.model_validate({"id": "v", "endpoint": "http://127.0.0.1/upload/s3cr3t"})
    assert "s3cr3t" not in repr(session) and "s3cr3t" not in str(session)
    result = UploadResult.model_validate({"id": "v", "pending_fields": ["title"]})
    assert result.title_pending
    assert not UploadResult.model_validate({"id": "v"}).title_pending


def test_every_id_field_comes_in_one_normal_form() -> None:
    canonical = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    for notation in (canonical.upper(), canonical.replace("-", ""), to_base58(canonical)):
        video = Video.model_validate(
            {
                "id": notation,
                "project_id": notation,
                "folder_id": notation,
                "workspace_id": notation,
                "storage_id": notation,
                "player_id": notation,
                "assets": [{"id": notation, "video_id": notation}],
                "audio_tracks": [{"id": notation}],
                "poster": {
                    "id": notation,
                    "media_id": notation,
                    "video_id": notation,
                    "storage_id": notation,
                },
                "meta": {"event_id": notation, "stream_id": notation, "note": notation},
            }
        )
        assert {video.id, video.project_id, video.folder_id, video.workspace_id, video.storage_id} == {
            canonical
        }
        assert video.player_id == canonical
        assert video.assets is not None and (video.assets[0].id, video.assets[0].video_id) == (canonical,) * 2
        assert video.audio_tracks is not None and video.audio_tracks[0].id == canonical
        poster = video.poster
        assert poster is not None and {poster.id, poster.media_id, poster.video_id, poster.storage_id} == {
            canonical
        }
        assert video.meta == {"event_id": canonical, "stream_id": canonical, "note": notation}  # only ids
        assert UploadSession.model_validate({"id": notation, "endpoint": "x"}).id == canonical
        result = UploadResult.model_validate({"id": notation, "project_id": notation})
        assert (result.id, result.project_id) == (canonical, canonical)
    assert Video.model_validate({"id": "not-an-id"}).id == "not-an-id"  # anything else stays as it came


def test_values_shaped_almost_like_an_identifier_stay_as_answered() -> None:
    canonical = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
    assert Video.model_validate({"id": canonical.replace("-", "").upper()}).id == canonical
    for value in (
        "x" * 36,
        canonical[:-1] + "g",  # not hex
        canonical.replace("-", "")[:-1] + "g",
        "0f1e2d3c4-b5a-6978-8796-a5b4c3d2e1f0",  # dashes in other places
        canonical + "0",
    ):
        assert Video.model_validate({"id": value}).id == value

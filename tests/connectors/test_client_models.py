"""Response models: missing optional fields tolerated, unknown fields kept, secrets out of repr."""

from __future__ import annotations

from connectors.models import Chapters, UploadResult, UploadSession, Video, VideoPage


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

"""The item model: routing, the key formula, owed metadata and the row error."""

from __future__ import annotations

import pytest

from videoferry.core.item import (
    Chapter,
    ItemSpec,
    ItemState,
    PrivacyType,
    RowError,
    SourceKind,
    Via,
    choose_via,
    default_title,
    derive_key,
    owed_update,
    owes_metadata,
    source_kind,
)

PARENT = "0f8fad5b-d9cb-469f-a165-70867728950e"


def spec(**fields: object) -> ItemSpec:
    values: dict[str, object] = {"key": "k1", "source": "/m/a.mp4", "parent_id": PARENT, "via": Via.TUS}
    values["title"] = "a"
    values.update(fields)
    return ItemSpec(**values)  # type: ignore[arg-type]


def test_source_kinds() -> None:
    assert source_kind("HTTPS://h.test/a.mp4") is SourceKind.URL
    assert source_kind("s3://b/k.mp4") is SourceKind.S3
    assert source_kind("/m/a.mp4") is SourceKind.FILE
    assert spec(source="http://h.test/x").source_kind is SourceKind.URL


@pytest.mark.parametrize(
    ("kind", "option", "via"),
    [
        (SourceKind.FILE, "auto", Via.TUS),
        (SourceKind.FILE, "single", Via.SINGLE),
        (SourceKind.S3, "auto", Via.TUS),
        (SourceKind.S3, "url", Via.URL),
        (SourceKind.URL, "auto", Via.URL),
        (SourceKind.URL, "url", Via.URL),
    ],
)
def test_choose_via(kind: SourceKind, option: str, via: Via) -> None:
    assert choose_via(kind, option) is via


@pytest.mark.parametrize(
    ("kind", "option", "reason"),
    [
        (SourceKind.FILE, "url", "a local file cannot be imported by URL"),
        (SourceKind.URL, "tus", "only be imported by URL"),
        (SourceKind.URL, "single", "only be imported by URL"),
        (SourceKind.S3, "ftp", "unknown --via value 'ftp'"),
    ],
)
def test_choose_via_refuses(kind: SourceKind, option: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        choose_via(kind, option)


def test_derive_key_ignores_signatures_only_for_urls() -> None:
    signed = derive_key("https://cdn.test/a.mp4?sig=1", PARENT)
    assert signed == derive_key("https://cdn.test/a.mp4?sig=2#t", PARENT)
    assert len(signed) == 32 and int(signed, 16) >= 0
    assert derive_key("/m/a.mp4?x", PARENT) != derive_key("/m/a.mp4", PARENT)
    assert derive_key("/m/a.mp4", PARENT) != derive_key("/m/a.mp4", "other")


def test_default_title() -> None:
    assert default_title("https://h.test/p/Talk.One.mp4?sig=1", "k") == "Talk.One"
    assert default_title("/m/clip", "k") == "clip"
    assert default_title("https://h.test/", "key1") == "h"  # the host, without its "extension"
    assert default_title("", "key1") == "key1"


def test_owed_update_before_and_after_create() -> None:
    item = spec(title="Café", description="d", tags=("a",), privacy_type=PrivacyType.CUSTOM)
    item = ItemSpec(**{**item.__dict__, "privacy_domains": ("example.com",)})
    assert owed_update(item, None, None) == {
        "tags": ["a"],
        "privacy_type": "custom",
        "privacy_domains": ["example.com"],
    }
    owed = owed_update(item, "videoferry-pending-abc", None)
    assert owed["title"] == "Café" and owed["description"] == "d"
    settled = owed_update(item, "Café", "d")
    assert "title" not in settled and "description" not in settled


def test_owes_metadata_counts_chapters() -> None:
    assert not owes_metadata(spec(), "a", None)
    assert owes_metadata(spec(chapters=(Chapter(0.0, "Intro"),)), "a", None)
    assert owes_metadata(spec(title="b"), "a", None)


def test_spec_repr_hides_the_source() -> None:
    text = repr(spec(source="https://h.test/a.mp4?X-Amz-Signature=SECRET"))
    assert "SECRET" not in text and "k1" in text


def test_row_error_names_row_field_and_reason() -> None:
    error = RowError(7, "source", "x", "missing")
    assert str(error) == "row 7, field source: missing"
    assert error == RowError(7, "source", "x", "missing") and error != RowError(8, "source", "x", "missing")
    assert isinstance(error, ValueError)


def test_states_are_their_stored_text() -> None:
    assert ItemState.DONE == "done" and f"{ItemState.PLANNED}" == "planned"

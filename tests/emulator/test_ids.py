"""Identifiers: the three notations address the same object; 400301 / 400302 for unparseable ones."""

from __future__ import annotations

import uuid

import httpx
import pytest

from videoferry.emulator.errors import ApiError
from videoferry.emulator.ids import BASE58_ALPHABET, parse_id, to_base58, to_hex


def test_round_trip_of_every_notation() -> None:
    for _ in range(200):
        value = str(uuid.uuid4())
        encoded = to_base58(value)
        assert len(encoded) == 22
        assert parse_id(encoded) == value
        unpadded = encoded.lstrip("0")
        if len(unpadded) >= 21:  # 21 or 22 characters are the base58 notation; a rarer shorter one is not
            assert parse_id(unpadded) == value
        assert parse_id(to_hex(value)) == value
        assert parse_id(value.upper()) == value


def test_small_values_are_padded_with_zeros() -> None:
    value = str(uuid.UUID(int=57))
    assert to_base58(value) == "0" * 21 + BASE58_ALPHABET[57]
    assert parse_id("0" * 20 + "z") == value


@pytest.mark.parametrize(
    "bad", ["", "abc", "not-a-uuid", "g" * 32, "1" * 23, "0123456789-abcdef-0123-4567-89abcdef"]
)
def test_unparseable_is_400301(bad: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_id(bad)
    assert (err.value.status, err.value.code) == (400, 400301)


@pytest.mark.parametrize("bad", ["O" * 22, "1" * 20 + "I", "l" + "2" * 21, "1" * 10 + "0" + "1" * 10])
def test_outside_base58_alphabet_is_400302(bad: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_id(bad)
    assert err.value.code == 400302


def test_overflowing_base58_is_400301() -> None:
    with pytest.raises(ApiError) as err:
        parse_id("z" * 22)
    assert err.value.code == 400301


def test_all_notations_address_the_same_video(api: httpx.Client, done_video: dict) -> None:
    video_id = done_video["id"]
    for notation in (video_id, to_hex(video_id), to_base58(video_id), to_base58(video_id).lstrip("0")):
        response = api.get(f"/v1/videos/{notation}")
        assert response.status_code == 200
        assert response.json()["data"]["id"] == video_id
    patched = api.patch(f"/v1/videos/{to_base58(video_id)}", json={"title": "renamed"})
    assert patched.json()["data"]["title"] == "renamed"
    listed = api.get("/v1/videos", params={"project_id": to_hex(done_video["project_id"])}).json()
    assert [v["id"] for v in listed["data"]] == [video_id]


def test_bad_identifiers_over_http(api: httpx.Client) -> None:
    bad = api.get("/v1/videos/not-an-id")
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == 400301
    assert bad.json()["error"]["message"] == "invalid uuid format"
    assert "detail" in bad.json()["error"]
    assert "x-request-id" in bad.headers
    base58_bad = api.get("/v1/videos/" + "O" * 22)
    assert base58_bad.json()["error"]["code"] == 400302
    missing = api.get(f"/v1/videos/{to_base58(str(uuid.uuid4()))}")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == 400404
    filter_bad = api.get("/v1/videos", params={"folder_id": "xyz"})
    assert filter_bad.json()["error"]["code"] == 400301

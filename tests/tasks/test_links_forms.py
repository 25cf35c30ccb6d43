"""The platform URL forms rewrite-embeds recognises, and what it leaves alone (no service needed)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.platform_keys import platform_key
from tasks.links.platforms import embed_url, find_platform_urls, page_url
from tasks.links.rewrite import EmbedMap, rewrite_text
from tasks.links.table import LinkRow, url_key

FORMS = [
    ("https://player.vimeo.com/video/123456?h=abcdef", "vimeo", "123456", True),
    ("http://vimeo.com/123456/", "vimeo", "123456", False),
    ("www.vimeo.com/123456", "vimeo", "123456", False),
    ("vimeo.com/channels/staffpicks/123456", "vimeo", "123456", False),
    ("//fast.wistia.net/embed/iframe/abc123xyz?videoFoam=true", "wistia", "abc123xyz", True),
    ("https://acme.wistia.com/medias/abc123xyz", "wistia", "abc123xyz", False),
    ("https://www.youtube.com/embed/dQw4w9WgXcQ?rel=0", "youtube", "dQw4w9WgXcQ", True),
    ("https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ", True),
    ("https://youtu.be/dQw4w9WgXcQ?t=3", "youtube", "dQw4w9WgXcQ", False),
    ("youtube.com/watch?v=dQw4w9WgXcQ&t=30s", "youtube", "dQw4w9WgXcQ", False),
    ("https://m.youtube.com/watch?feature=share&amp;v=dQw4w9WgXcQ", "youtube", "dQw4w9WgXcQ", False),
    (
        "https://player.mux.com/EcHgOK9coz5K4rjSwOkoE7Y7O01201YMIC200RI6lNxnhs",
        "mux",
        "EcHgOK9coz5K4rjSwOkoE7Y7O01201YMIC200RI6lNxnhs",
        True,
    ),
    ("https://stream.mux.com/Abc123.m3u8", "mux", "Abc123", False),
    ("https://stream.mux.com/Abc123/high.mp4", "mux", "Abc123", False),  # a static MP4: taken whole
    (
        "https://customer-f33zs165nr7gyfy4.cloudflarestream.com/6b9e68b0/manifest/video.m3u8",
        "cloudflare",
        "6b9e68b0",
        False,
    ),
    ("https://videodelivery.net/6b9e68b0/manifest/video.mpd", "cloudflare", "6b9e68b0", False),
    (
        "https://iframe.videodelivery.net/5d5bc37ffcf54c9b82e996823bffbb81",
        "cloudflare",
        "5d5bc37ffcf54c9b82e996823bffbb81",
        True,
    ),
    (
        "https://customer-f33zs165nr7gyfy4.cloudflarestream.com/6b9e68b0/iframe",
        "cloudflare",
        "6b9e68b0",
        True,
    ),
    ("https://embed.api.video/vod/vi4k0jvEUuaTdRAEjQ4Jfrgz", "apivideo", "vi4k0jvEUuaTdRAEjQ4Jfrgz", True),
    (
        "https://iframe.mediadelivery.net/embed/759/eb1c4f77-0cda-46be-b47d-1118ad7c2ffe",
        "bunny",
        "759/eb1c4f77-0cda-46be-b47d-1118ad7c2ffe",
        True,
    ),
]


@pytest.mark.parametrize(("url", "platform", "ident", "player"), FORMS)
def test_each_documented_form_is_found_whole(url: str, platform: str, ident: str, player: bool) -> None:
    text = f'<p>see "{url}". Next</p>'
    (found,) = find_platform_urls(text)
    assert (found.text, found.platform, found.ident, found.player) == (url, platform, ident, player)


@pytest.mark.parametrize(
    "text",
    [
        "notvimeo.com/123",
        "https://example.com/vimeo.com/123",
        "user@vimeo.com",
        "youtu.be/short",
        "vimeo.com/about",
    ],
)
def test_lookalikes_are_not_platform_urls(text: str) -> None:
    assert find_platform_urls(text) == []


def test_keys_and_their_documented_urls() -> None:
    assert platform_key("vimeo:123") == ("vimeo", "123")
    assert platform_key("Vimeo:123") == ("vimeo", "123")
    assert platform_key("a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5") is None
    assert platform_key("ftp:thing") is None
    assert (page_url("youtube", "X"), embed_url("youtube", "X")) == (
        "https://www.youtube.com/watch?v=X",
        "https://www.youtube.com/embed/X",
    )
    assert page_url("wistia", "X") is None and embed_url("bunny", "no-library") is None
    assert embed_url("mux", "asset-id") is None  # a mux: key holds the asset id, not a playback id


def test_an_address_is_looked_up_as_a_web_server_sees_it() -> None:
    assert url_key("https://www.cdn.example.com/a%20b.mp4?sig=1") == "cdn.example.com/a b.mp4"
    assert url_key("https://www.cdn.example.com/a.mp4", keep_www=True) == "www.cdn.example.com/a.mp4"


def _row(source: str, page: str = "") -> LinkRow:
    return LinkRow(
        source, page, "", "v1", "https://new/play/v1", "https://new/embed/v1", "t", source, "migrate"
    )


def test_script_embeds_and_media_tags_are_listed_not_rewritten() -> None:
    links = EmbedMap(
        [_row("wistia:abc123xyz"), _row("https://cdn.example.com/a.mp4", "https://cdn.example.com/a.mp4")]
    )
    text = (
        '<script src="https://fast.wistia.com/embed/medias/abc123xyz.jsonp" async></script>\n'
        '<source src="https://cdn.example.com/a.mp4" type="video/mp4">\n'
        "plain: https://cdn.example.com/a.mp4.\n"
        '<iframe src="https://cdn.example.com/a.mp4"></iframe>\n'
    )
    done = rewrite_text(text, links)
    assert done.text.splitlines()[2:] == [
        "plain: https://new/play/v1.",
        '<iframe src="https://new/embed/v1"></iframe>',
    ]
    assert [(u.line, u.reason.split(" ")[0]) for u in done.unmapped] == [(1, "followed"), (2, "in")]
    assert rewrite_text(done.text, links).text == done.text


@pytest.mark.parametrize(
    "url",
    [
        "https://image.mux.com/Abc123/thumbnail.jpg?time=2",
        "https://image.mux.com/Abc123/animated.gif",
        "https://customer-f33zs165nr7gyfy4.cloudflarestream.com/6b9e68b0/thumbnails/thumbnail.jpg",
    ],
)
def test_an_image_of_a_migrated_video_is_listed_whole_never_rewritten(url: str) -> None:
    links = EmbedMap([replace(_row("mux:asset1"), aliases=("mux:Abc123", "cloudflare:6b9e68b0"))])
    text = f'<img src="{url}">'
    (found,) = find_platform_urls(text)
    assert found.still and found.text == url
    done = rewrite_text(text, links)
    assert done.text == text and done.replaced == 0
    (left,) = done.unmapped
    assert "an image of" in left.reason and "?" not in left.url


def test_a_mux_item_is_found_by_its_playback_ids_and_its_token_goes_with_the_old_url() -> None:
    links = EmbedMap([replace(_row("mux:asset1"), aliases=("mux:pubId", "mux:signedId"))])
    text = (
        '<iframe src="https://player.mux.com/signedId?playback-token=eyJ.secret.sig"></iframe>\n'
        "https://stream.mux.com/pubId.m3u8\n"
        "https://player.mux.com/otherId\n"
    )
    done = rewrite_text(text, links)
    assert done.text.splitlines()[:2] == [
        '<iframe src="https://new/embed/v1"></iframe>',
        "https://new/play/v1",
    ]
    assert "eyJ" not in done.text
    (left,) = done.unmapped
    assert left.url == "https://player.mux.com/otherId" and "no migrated item mux:otherId" in left.reason

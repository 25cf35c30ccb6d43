"""The one set of redaction rules."""

from __future__ import annotations

from videoferry.core.redact import log_url, safe_uri, sanitize, scrub, scrub_aws, scrub_urls


def test_safe_uri_drops_user_info_query_and_fragment() -> None:
    assert safe_uri("https://user:pw@h.example:8443/p/v.mp4?sig=1#x") == "https://h.example:8443/p/v.mp4"
    assert safe_uri("s3://bucket/key.mp4") == "s3://bucket/key.mp4"
    assert safe_uri("/local/a.mp4") == "/local/a.mp4"


def test_scrub_urls_inside_text() -> None:
    text = scrub_urls("failed: https://u:p@h.test/a.mp4?X-Amz-Signature=abc retry")
    assert text == "failed: https://h.test/a.mp4 retry"


def test_sanitize_drops_secret_named_keys_at_any_depth() -> None:
    value = {"title": "t", "stream_key": "k", "nested": [{"password": "p", "keep": 1}], "api_token": "x"}
    assert sanitize(value) == {"title": "t", "nested": [{"keep": 1}]}


def test_scrub_replaces_known_secrets_and_cuts_long_text() -> None:
    assert scrub("at https://up.test/files/abc", ["https://up.test/files/abc"]) == "at <redacted>"
    assert scrub("x", [None, ""], "<upload endpoint>") == "x"
    assert len(scrub("y" * 5000, [])) == 2000


def test_log_url_keeps_api_paths_and_hides_upload_endpoints() -> None:
    assert log_url("http://127.0.0.1:9/v1/videos?page=2") == "http://127.0.0.1:9/v1/videos?page=2"
    assert log_url("http://127.0.0.1:9/files/secret-session") == "http://127.0.0.1:9/<upload endpoint>"
    assert log_url("not a url") == "<url>"


def test_scrub_aws_blanks_signatures() -> None:
    text = scrub_aws("X-Amz-Signature=abcdef&X-Amz-Credential=AKIA/x Authorization: AWS4 sig")
    assert "abcdef" not in text and "AKIA" not in text

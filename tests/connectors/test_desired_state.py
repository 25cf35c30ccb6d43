"""The desired-state file of setup: every rule of the spec checked with the file's line and field."""

from __future__ import annotations

import textwrap
from datetime import date
from pathlib import Path

import pytest

from videoferry.connectors.desired_state import (
    DesiredStateError,
    SecretRef,
    load_desired_state,
    parse_secret_ref,
)

PARENT = "11111111-1111-1111-1111-111111111111"
SECRETS = {"PW": "s3cret-pw", "ONE": "x", "YT": "yt-key-123"}


def resolver(ref: SecretRef) -> str:
    if ref.env in SECRETS:
        return SECRETS[ref.env]
    raise KeyError(str(ref))


def load(tmp_path: Path, text: str, name: str = "state.yaml") -> object:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_desired_state(path, resolver, today=date(2026, 11, 23))


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(DesiredStateError) as caught:
        load(tmp_path, text)
    return caught.value.problems


def event(body: str) -> str:
    """A file with one event (lines 1-4) whose extra lines start at line 5."""
    return f"parent_id: {PARENT}\nevents:\n  - name: Room\n    type: one-time\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )


def test_a_full_file_reads(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        f"""
        parent_id: {PARENT}
        privacy_domains: [Example.com, "*.example.org"]
        drm:
          workspace: {{url: "https://drm.example/cb", username: u, password: "${{PW}}", strict: true}}
          projects:
            {PARENT}: {{url: "https://drm.example/p", strict: false}}
        events:
          - name: Keynote
            type: recurring
            scheduled_time: 2026-12-01T09:00:00Z
            presets: [720p, 1080p]
            latency_mode: reduced
            chat_active: true
            privacy_type: custom
            privacy_domains: [example.com]
            privacy_share: {{password: "${{PW}}"}}
            restreams: [{{name: yt, url: "rtmp://yt/live", key: "${{YT}}", enabled: true}}]
            unique_codes: [{{name: cohort, codes_amount: 10, sessions_per_code: 2, starts_at: 2026-12-01}}]
            poster: https://img.example/p.png
        """,
    )
    assert [d.domain for d in state.privacy_domains] == ["example.com", "*.example.org"]  # type: ignore[attr-defined]
    (spec,) = state.events  # type: ignore[attr-defined]
    assert spec.fields["privacy_share"] == {"password": "s3cret-pw"}
    assert spec.restreams[0].key == "yt-key-123"
    assert "s3cret" not in repr(spec) and "yt-key" not in repr(spec)
    assert [d.project_id for d in state.drm] == [None, PARENT]  # type: ignore[attr-defined]
    assert set(state.secrets) == {"s3cret-pw", "yt-key-123"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("privacy_share: {password: '${ONE}'}\n", ":5: privacy_share.password: at least 2 characters"),
        (
            "privacy_share: {password: '${PW}', link_hash: abc123}\n",
            ":5: privacy_share.password: cannot be combined with link_hash",
        ),
        ("privacy_share: {link_hash: abc12}\n", ":5: privacy_share.link_hash: exactly 6 letters or digits"),
        ("privacy_share: {link_hash: abc-12}\n", ":5: privacy_share.link_hash: exactly 6 letters or digits"),
        ("privacy_type: custom\n", ":5: privacy_domains: required when privacy_type is custom"),
        (
            "unique_codes:\n  - {name: b, codes_amount: 0}\n",
            ":6: unique_codes[0].codes_amount: an integer from 1",
        ),
        ("unique_codes:\n  - {name: b, codes_amount: 10000}\n", ":6: unique_codes[0].codes_amount"),
        (
            "unique_codes:\n  - {name: b, codes_amount: 5, sessions_per_code: 101}\n",
            ":6: unique_codes[0].sessions_per_code: an integer from 1 to 100",
        ),
        (
            "unique_codes:\n  - {name: b, codes_amount: 5, max_count: 0}\n",
            ":6: unique_codes[0].max_count: an integer from 1 to 9999",
        ),
        (
            "unique_codes:\n  - {name: b, codes_amount: 5}\n  - {name: b, codes_amount: 5}\n",
            ":7: unique_codes[1].name: 'b' twice in the event",
        ),
        (
            f"unique_codes:\n  - {{name: {'n' * 256}, codes_amount: 5}}\n",
            ":6: unique_codes[0].name: at most 255",
        ),
        (
            "unique_codes:\n  - {name: b, codes_amount: 5, starts_at: 2026-12-02, expires_at: 2026-12-01}\n",
            ":6: unique_codes[0].expires_at: earlier than starts_at",
        ),
        (
            "restreams:\n  - {name: yt, url: rtmp://x, key: plain-literal}\n",
            ":6: restreams[0].key: must be a reference",
        ),
        (
            "restreams:\n  - {name: yt, url: rtmp://x, key: '${NOPE}'}\n",
            ":6: restreams[0].key: ${NOPE} is not set",
        ),
        ("latency_mode: fast\n", ":5: latency_mode: one of standard, reduced"),
        ("presets: [720p, 4k]\n", ":5: presets: '4k' is not one of"),
        ("chat_active: maybe\n", ":5: chat_active: true or false"),
        ("colour: red\n", ":5: colour: unknown field"),
        (
            "unique_codes_enabled: false\nunique_codes: [{name: b, codes_amount: 1}]\n",
            ":5: unique_codes_enabled: false, but the first batch turns it on",
        ),
        (
            "unique_codes_enabled: true\nprivacy_share: {password: '${PW}'}\n",
            ":6: privacy_share: reset by unique_codes_enabled: true",
        ),
    ],
)
def test_each_rule_names_line_and_field(tmp_path: Path, body: str, expected: str) -> None:
    found = problems(tmp_path, event(body))
    assert any(expected in p for p in found), found
    assert all(p.startswith(str(tmp_path / "state.yaml")) for p in found)
    assert not any("s3cret" in p or "plain-literal" in p for p in found)  # never the value of a secret


def test_past_dates_are_kept_for_the_create(tmp_path: Path) -> None:
    state = load(tmp_path, event("unique_codes:\n  - {name: b, codes_amount: 5, starts_at: 2026-11-01}\n"))
    batch = state.events[0].batches[0]  # type: ignore[attr-defined]
    assert batch.past is not None and ":6: unique_codes[0].starts_at: in the past" in batch.past


def test_names_are_unique_per_parent_and_required(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        f"parent_id: {PARENT}\nevents:\n  - {{name: A, type: one-time}}\n  - {{name: A, type: recurring}}\n"
        "  - {type: one-time}\n  - {name: B, type: weekly}\n",
    )
    assert any(":4: name: 'A' already declared at" in p for p in found)
    assert any(":5: name: required" in p for p in found)
    assert any(":6: type: required: one of one-time, recurring" in p for p in found)


def test_events_from_csv_over_defaults(tmp_path: Path) -> None:
    (tmp_path / "rooms.csv").write_text(
        "name,type,latency_mode,presets\nRoom 1,one-time,reduced,720p;1080p\n"
        "Room 2,recurring,,\nRoom 3,one-time,slow,\n",
        encoding="utf-8",
    )
    text = (
        f"parent_id: {PARENT}\nevents_csv:\n  path: rooms.csv\n  defaults:\n    chat_active: true\n"
        "    unique_codes: [{name: all, codes_amount: 3}]\n"
    )
    found = problems(tmp_path, text)
    assert found == [f"{tmp_path / 'rooms.csv'}:4: latency_mode: one of standard, reduced"]
    (tmp_path / "rooms.csv").write_text("name,type,presets\nRoom 1,one-time,720p;1080p\nRoom 2,recurring,\n")
    state = load(tmp_path, text)
    rooms = state.events  # type: ignore[attr-defined]
    assert [e.name for e in rooms] == ["Room 1", "Room 2"]
    assert rooms[0].fields["presets"] == ["720p", "1080p"] and rooms[1].fields["chat_active"] is True
    assert rooms[1].batches[0].name == "all"


def test_secret_references() -> None:
    assert parse_secret_ref("${YT_KEY}") == SecretRef(env="YT_KEY")
    assert parse_secret_ref("secret-block:yt-key") == SecretRef(block="yt-key")
    assert parse_secret_ref("literal") is None and parse_secret_ref(5) is None


def test_not_yaml(tmp_path: Path) -> None:
    found = problems(tmp_path, "events: [\n  - a: b\n")
    assert found[0].startswith(f"{tmp_path / 'state.yaml'}:") and "not valid YAML" in found[0]

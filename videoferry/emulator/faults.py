"""Seeded fault rules: errors, latency, dropped connections, forced 429, truncated bodies, bandwidth, and
webhook faults (lost, duplicated, out of order, late, forged)."""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from videoferry.emulator.errors import Invalid, validation
from videoferry.emulator.state import STATUSES

REQUEST_KINDS = ("error", "latency", "drop_after_commit", "rate_limit", "truncate_body", "bandwidth")
#: Faults of media.update.status deliveries (a rule of these kinds takes no method or path).
WEBHOOK_KINDS = (
    "webhook_lost",
    "webhook_duplicate",
    "webhook_out_of_order",
    "webhook_late",
    "webhook_forged",
)
KINDS = REQUEST_KINDS + WEBHOOK_KINDS
BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})
#: What a forged webhook falsely claims: done for a video still processing, done for an id the workspace
#: does not have, error for a video that is done.
CLAIMS = ("done-processing", "done-unknown", "error-done")
#: The credentials a forged webhook carries: none, wrong ones, the configured ones.
AUTHS = ("none", "wrong", "configured")
_DEFAULT_MS = {"latency": 200.0, "webhook_late": 3000.0, "webhook_out_of_order": 3000.0}


@dataclass
class FaultRule:
    """One rule: what to inject, how often, on which requests and how many times at most."""

    kind: str
    rate: float = 1.0
    method: str | None = None
    path: re.Pattern[str] | None = None
    times: int | None = None
    status: int = 500
    ms: float = 200.0
    bytes_per_second: int = 1_000_000
    fraction: float = 0.5
    video_status: str | None = None  # webhook kinds: only deliveries of this status
    claim: str | None = None  # webhook_forged: what it claims (None: drawn)
    auth: str | None = None  # webhook_forged: its credentials (None: drawn)
    applied: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Whether the rule concerns this request (before the random draw)."""
        if self.kind in WEBHOOK_KINDS or (self.times is not None and self.applied >= self.times):
            return False
        if self.method is not None and self.method != method:
            return False
        if self.kind in ("truncate_body", "bandwidth") and method not in BODY_METHODS:
            return False
        return self.path is None or self.path.search(path) is not None


@dataclass
class FaultDecision:
    """The faults to apply to one request."""

    latency_ms: float = 0.0
    error_status: int | None = None
    drop_after_commit: bool = False
    rate_limit: bool = False
    truncate_fraction: float | None = None
    bytes_per_second: int | None = None

    @property
    def any(self) -> bool:
        """Whether anything is to be injected."""
        return bool(
            self.latency_ms
            or self.error_status
            or self.drop_after_commit
            or self.rate_limit
            or self.truncate_fraction is not None
            or self.bytes_per_second
        )


NO_FAULT = FaultDecision()


@dataclass
class WebhookDecision:
    """The faults of one media.update.status delivery."""

    lost: bool = False
    duplicate: bool = False
    late_ms: float = 0.0  # sent after this delay, on its own (later deliveries may pass it)
    hold_ms: float = 0.0  # out of order: held until the video's next delivery is sent (at most this long)
    forged: list[tuple[str, str]] = field(default_factory=list)  # (claim, auth) of forged ones to send


NO_WEBHOOK_FAULT = WebhookDecision()


@dataclass
class FaultSet:
    """The rules of one workspace with their own seeded random generator (same seed, same draws)."""

    seed: int
    rules: list[FaultRule]
    rng: random.Random = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def decide(self, method: str, path: str) -> FaultDecision:
        """Draw, rule by rule in order, the faults for one request."""
        decision: FaultDecision | None = None
        with self.lock:
            for rule in self.rules:
                if not rule.matches(method, path):
                    continue
                if self.rng.random() >= rule.rate:
                    continue
                rule.applied += 1
                decision = decision or FaultDecision()
                if rule.kind == "error":
                    decision.error_status = decision.error_status or rule.status
                elif rule.kind == "latency":
                    decision.latency_ms += rule.ms
                elif rule.kind == "drop_after_commit":
                    decision.drop_after_commit = True
                elif rule.kind == "rate_limit":
                    decision.rate_limit = True
                elif rule.kind == "truncate_body":
                    decision.truncate_fraction = rule.fraction
                elif rule.kind == "bandwidth":
                    decision.bytes_per_second = rule.bytes_per_second
        return decision or NO_FAULT

    def decide_webhook(self, status: str) -> WebhookDecision:
        """Draw, rule by rule in order, the faults of one delivery of this status."""
        decision: WebhookDecision | None = None
        with self.lock:
            for rule in self.rules:
                if rule.kind not in WEBHOOK_KINDS:
                    continue
                if rule.times is not None and rule.applied >= rule.times:
                    continue
                if rule.video_status is not None and rule.video_status != status:
                    continue
                if self.rng.random() >= rule.rate:
                    continue
                rule.applied += 1
                decision = decision or WebhookDecision()
                if rule.kind == "webhook_lost":
                    decision.lost = True
                elif rule.kind == "webhook_duplicate":
                    decision.duplicate = True
                elif rule.kind == "webhook_late":
                    decision.late_ms = max(decision.late_ms, rule.ms)
                elif rule.kind == "webhook_out_of_order":
                    decision.hold_ms = max(decision.hold_ms, rule.ms)
                else:
                    claim = rule.claim or self.rng.choice(CLAIMS)
                    decision.forged.append((claim, rule.auth or self.rng.choice(AUTHS)))
        return decision or NO_WEBHOOK_FAULT

    def draw(self, choices: tuple[str, ...]) -> str:
        """One seeded choice (a forged webhook's target among candidates)."""
        with self.lock:
            return self.rng.choice(choices)


def _num(raw: dict[str, Any], key: str, default: float, name: str, bad: list[Invalid]) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        bad.append(Invalid(name, "type", "number"))
        return default
    return float(value)


def _webhook_fields(raw: dict[str, Any], rule: FaultRule, name: str, bad: list[Invalid]) -> None:
    """video_status, claim and auth of a webhook rule; a webhook rule has no method or path, and a request
    rule none of these."""
    webhook = rule.kind in WEBHOOK_KINDS
    forged = rule.kind == "webhook_forged"
    allowed = {"video_status": webhook, "claim": forged, "auth": forged}
    allowed.update(method=not webhook, path=not webhook)
    for key, ok in allowed.items():
        if raw.get(key) is not None and not ok:
            bad.append(Invalid(f"{name}.{key}", "excluded", f"not a parameter of kind {rule.kind}"))
    for key, choices in (("video_status", STATUSES), ("claim", CLAIMS), ("auth", AUTHS)):
        value = raw.get(key)
        if value is None or not allowed[key]:
            continue
        if value not in choices:
            bad.append(Invalid(f"{name}.{key}", "oneof", " ".join(choices)))
        else:
            setattr(rule, key, value)


def parse_faults(body: dict[str, Any]) -> FaultSet:
    """Build a FaultSet from the control API body {seed, rules}; 400400 names every bad field."""
    bad: list[Invalid] = []
    seed = body.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        bad.append(Invalid("seed", "type", "integer"))
        seed = 0
    raw_rules = body.get("rules", [])
    if not isinstance(raw_rules, list):
        raise validation(Invalid("rules", "type", "array of rules"))
    rules: list[FaultRule] = []
    for i, raw in enumerate(raw_rules):
        name = f"rules[{i}]"
        if not isinstance(raw, dict):
            bad.append(Invalid(name, "type", "object"))
            continue
        kind = raw.get("kind")
        if kind not in KINDS:
            bad.append(Invalid(f"{name}.kind", "oneof", " ".join(KINDS)))
            continue
        rule = FaultRule(kind=kind)
        rule.rate = _num(raw, "rate", 1.0, f"{name}.rate", bad)
        if not 0.0 <= rule.rate <= 1.0:
            bad.append(Invalid(f"{name}.rate", "range", "0..1"))
        method = raw.get("method")
        if method is not None:
            if not isinstance(method, str):
                bad.append(Invalid(f"{name}.method", "type", "string"))
            else:
                rule.method = method.upper()
        path = raw.get("path")
        if path is not None:
            try:
                rule.path = re.compile(str(path))
            except re.error:
                bad.append(Invalid(f"{name}.path", "regex", "a valid regular expression"))
        times = raw.get("times")
        if times is not None:
            if isinstance(times, bool) or not isinstance(times, int) or times < 0:
                bad.append(Invalid(f"{name}.times", "min", "integer >= 0"))
            else:
                rule.times = times
        rule.status = int(_num(raw, "status", 500, f"{name}.status", bad))
        if not 400 <= rule.status <= 599:
            bad.append(Invalid(f"{name}.status", "range", "400..599"))
        rule.ms = _num(raw, "ms", _DEFAULT_MS.get(kind, 200.0), f"{name}.ms", bad)
        if rule.ms < 0:
            bad.append(Invalid(f"{name}.ms", "min", "number >= 0"))
        _webhook_fields(raw, rule, name, bad)
        rule.bytes_per_second = int(_num(raw, "bytes_per_second", 1_000_000, f"{name}.bytes_per_second", bad))
        if rule.bytes_per_second < 1:
            bad.append(Invalid(f"{name}.bytes_per_second", "min", "integer >= 1"))
        rule.fraction = _num(raw, "fraction", 0.5, f"{name}.fraction", bad)
        if not 0.0 <= rule.fraction < 1.0:
            bad.append(Invalid(f"{name}.fraction", "range", "0 <= fraction < 1"))
        rules.append(rule)
    if bad:
        raise validation(*bad)
    return FaultSet(seed=seed, rules=rules)

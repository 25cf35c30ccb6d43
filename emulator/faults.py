"""Seeded fault rules: errors, latency, dropped connections, forced 429, truncated bodies, bandwidth."""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from emulator.errors import Invalid, validation

KINDS = ("error", "latency", "drop_after_commit", "rate_limit", "truncate_body", "bandwidth")
BODY_METHODS = frozenset({"POST", "PATCH", "PUT"})


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
    applied: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Whether the rule concerns this request (before the random draw)."""
        if self.times is not None and self.applied >= self.times:
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


def _num(raw: dict[str, Any], key: str, default: float, name: str, bad: list[Invalid]) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        bad.append(Invalid(name, "type", "number"))
        return default
    return float(value)


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
        rule.ms = _num(raw, "ms", 200.0, f"{name}.ms", bad)
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

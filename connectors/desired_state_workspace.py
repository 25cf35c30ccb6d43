"""The rules of a setup desired-state file's DRM callbacks and privacy domains (spec 4.3, 4.4)."""

from __future__ import annotations

from typing import Any

from connectors.desired_state_models import DomainSpec, DrmSpec
from connectors.desired_state_rules import Reader, as_bool, strings

__all__ = ["read_drm", "read_domains"]


def read_drm(r: Reader, raw: Any, lines: dict[str, str], file_at: str) -> list[DrmSpec]:
    if not isinstance(raw, dict):
        r.fail(lines.get("drm", file_at), "drm", "must be a mapping (workspace, projects)")
        return []
    targets: list[tuple[str | None, str, Any]] = []
    if raw.get("workspace") is not None:
        targets.append((None, "drm.workspace", raw["workspace"]))
    for project, cfg in (raw.get("projects") or {}).items():
        targets.append((str(project), f"drm.projects.{project}", cfg))
    for key in sorted(set(raw) - {"workspace", "projects"}):
        r.fail(lines.get(f"drm.{key}", file_at), f"drm.{key}", "unknown field")
    out: list[DrmSpec] = []
    for project, path, cfg in targets:
        at = lines.get(path, file_at)
        if not isinstance(cfg, dict) or not isinstance(cfg.get("url"), str):
            r.fail(at, f"{path}.url", "required")
            continue
        for key in sorted(set(cfg) - {"url", "username", "password", "strict"}):
            r.fail(lines.get(f"{path}.{key}", at), f"{path}.{key}", "unknown field")
        password = None
        if cfg.get("password") is not None:
            password = r.secret(cfg["password"], lines.get(f"{path}.password", at), f"{path}.password")
        strict = as_bool(cfg["strict"]) if "strict" in cfg else None
        if "strict" in cfg and strict is None:
            r.fail(lines.get(f"{path}.strict", at), f"{path}.strict", "true or false")
        username = cfg.get("username")
        out.append(
            DrmSpec(project, cfg["url"], None if username is None else str(username), password, strict, at)
        )
    return out


def read_domains(r: Reader, raw: Any, lines: dict[str, str], file_at: str) -> list[DomainSpec] | None:
    """privacy_domains: host names, or mappings {domain, renamed_from?, archived?}; names lower-cased, each
    named once (a domain and the name it is renamed from alike)."""
    items = strings(raw) if isinstance(raw, str) else raw
    if not isinstance(items, list):
        r.fail(lines.get("privacy_domains", file_at), "privacy_domains", "a list of host names")
        return None
    out: list[DomainSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        path = f"privacy_domains[{i}]"
        at = lines.get(path, lines.get("privacy_domains", file_at))
        if isinstance(item, str):
            item = {"domain": item}
        if not isinstance(item, dict):
            r.fail(at, path, "a host name, or a mapping with domain (and renamed_from or archived)")
            continue
        for key in sorted(set(item) - {"domain", "renamed_from", "archived"}):
            r.fail(at, f"{path}.{key}", "unknown field")
        names = [item.get("domain"), item.get("renamed_from")]
        if not isinstance(names[0], str) or not names[0].strip():
            r.fail(at, f"{path}.domain", "required: a host name")
            continue
        if names[1] is not None and (not isinstance(names[1], str) or not names[1].strip()):
            r.fail(at, f"{path}.renamed_from", "a host name")
            continue
        archived = as_bool(item.get("archived", False))
        if archived is None:
            r.fail(at, f"{path}.archived", "true or false")
            continue
        domain, before = (str(n).strip().lower() if n is not None else None for n in names)
        for name in (domain, before):
            if name is not None and name in seen:
                r.fail(at, path, f"{name!r} named twice in privacy_domains")
            seen.add(name or "")
        out.append(DomainSpec(str(domain), before, archived, at))
    return out

"""DRM authorisation (4.3): the configuration per workspace or project, and the decision of 3.3."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import httpx

from videoferry.emulator.app import Ctx, Handler, Resp, Route, route
from videoferry.emulator.errors import not_found
from videoferry.emulator.ids import parse_id
from videoferry.emulator.live_state import DrmConfig, store, ts
from videoferry.emulator.scopes import require_owner, require_project
from videoferry.emulator.state import Workspace, utcnow
from videoferry.emulator.validation import Fields, read_json

CALLBACK_TIMEOUT = 5.0


def drm_json(cfg: DrmConfig) -> dict[str, Any]:
    """The DRM auth object of 2.6."""
    return {
        "url": cfg.url,
        "username": cfg.username,
        "password": cfg.password,
        "strict": cfg.strict,
        "created_at": ts(cfg.created_at),
        "updated_at": ts(cfg.updated_at),
    }


def _key(ctx: Ctx) -> str | None:
    raw = ctx.params.get("project_id")
    if raw is None:
        return None
    project_id = parse_id(raw)
    if project_id not in ctx.ws.projects:
        raise not_found("project")
    require_project(ctx, project_id)
    return project_id


def _config(ctx: Ctx, key: str | None) -> DrmConfig:
    cfg = store(ctx.ws).drm.get(key)
    if cfg is None:
        raise not_found("drm auth")
    return cfg


async def get_drm(ctx: Ctx) -> Resp:
    """GET /v1/drm/auth[/:project_id]: 404 / 400404 when not configured."""
    return Resp(200, {"data": drm_json(_config(ctx, _key(ctx)))})


async def put_drm(ctx: Ctx) -> Resp:
    """PUT /v1/drm/auth[/:project_id]: only passed fields change; url required the first time."""
    key = _key(ctx)
    f = Fields(await read_json(ctx.request))
    current = store(ctx.ws).drm.get(key)
    url = f.string("url", required=current is None, notempty=True)
    username = f.string("username")
    password = f.string("password")
    strict = f.boolean("strict")
    if url is not None and not url.lower().startswith(("http://", "https://")):
        f.add("url", "url", "http or https URL")
    f.check()
    with ctx.emu.lock:
        cfg = store(ctx.ws).drm.get(key)
        if cfg is None:
            assert url is not None
            cfg = DrmConfig(url=url)
            store(ctx.ws).drm[key] = cfg
        changed = False
        for name, value in (("url", url), ("username", username), ("password", password), ("strict", strict)):
            if value is not None and getattr(cfg, name) != value:
                setattr(cfg, name, value)
                changed = True
        if changed and current is not None:
            cfg.updated_at = utcnow()
    return Resp(200, {"data": drm_json(cfg)})


async def delete_drm(ctx: Ctx) -> Resp:
    """DELETE /v1/drm/auth[/:project_id]: owner only (100107); DRM must be configured again."""
    key = _key(ctx)
    require_owner(ctx)
    with ctx.emu.lock:
        _config(ctx, key)
        del store(ctx.ws).drm[key]
    return Resp(200, {"data": {"success": True}})


def drm_routes() -> list[Route]:
    """Routes of 4.3."""
    methods: dict[str, Handler] = {"GET": get_drm, "PUT": put_drm, "DELETE": delete_drm}
    return [route("/v1/drm/auth", methods), route("/v1/drm/auth/{project_id}", methods)]


def callback_for(ws: Workspace, project_id: str | None) -> DrmConfig | None:
    """The project's configuration first, else the workspace's."""
    drm = store(ws).drm
    if project_id is not None and project_id in drm:
        return drm[project_id]
    return drm.get(None)


def decide(strict: bool, status: int | None) -> str:
    """The table of 3.3: status None means no answer within 5 s or url unavailable."""
    if strict:
        return "issued" if status == 200 else "denied"
    return "denied" if status == 403 else "not_blocked"


async def license_request(
    cfg: DrmConfig, video_id: str, ip: str, user_agent: str, kind: str
) -> dict[str, Any]:
    """One POST to the callback (no retries), then the decision {decision, status, reason}.

    The 5 seconds (spec 8) bound the whole answer: connect, headers and body together, not each stage.
    """
    payload = {
        "id": video_id,
        "ip": ip,
        "type": kind,
        "token": secrets.token_hex(16),
        "user_agent": user_agent,
    }
    auth: httpx.BasicAuth | None = httpx.BasicAuth(cfg.username, cfg.password) if cfg.username else None
    status: int | None = None
    try:
        async with asyncio.timeout(CALLBACK_TIMEOUT):
            async with httpx.AsyncClient(timeout=None, follow_redirects=False) as client:
                response = await client.post(cfg.url, json=payload, auth=auth or httpx.USE_CLIENT_DEFAULT)
        status = response.status_code
        reason = f"the callback answered HTTP {status}"
    except (TimeoutError, httpx.TimeoutException):
        reason = "no answer within 5 seconds"
    except (httpx.HTTPError, OSError):
        reason = "the callback is unavailable"
    return {"decision": decide(cfg.strict, status), "status": status, "reason": reason}

"""Privacy domains (4.4): create, list (offset / limit meta), update (domain, archived), delete."""

from __future__ import annotations

import re
from typing import Any

from videoferry.emulator.app import Ctx, Resp, Route, route
from videoferry.emulator.errors import Invalid, domain_taken, not_found, validation
from videoferry.emulator.ids import new_id, parse_id
from videoferry.emulator.listing import by_update, order_of, query_int
from videoferry.emulator.live_state import Domain, store, ts
from videoferry.emulator.refusals import admit_create
from videoferry.emulator.state import Workspace, utcnow
from videoferry.emulator.validation import Fields, read_json

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
CREATED_BY = "Workspace Owner"
DEFAULT_LIMIT = 25
MAX_LIMIT = 100
ORDERABLE = ("created_at", "updated_at", "domain")


def valid_domain(value: str) -> bool:
    """A host name of two or more labels, optionally behind a `*.` wildcard."""
    host = value[2:] if value.startswith("*.") else value
    if len(host) > 253 or "." not in host:
        return False
    labels = host.split(".")
    return all(_LABEL.match(label) for label in labels) and not labels[-1].isdigit()


def domain_json(ws: Workspace, item: Domain) -> dict[str, Any]:
    """The Privacy domain object of 2.7; media_count counts videos naming the domain."""
    count = sum(1 for v in ws.videos.values() if item.domain in v.privacy_domains)
    return {
        "id": item.id,
        "workspace_id": ws.id,
        "domain": item.domain,
        "created_by_user_name": CREATED_BY,
        "created_at": ts(item.created_at),
        "updated_at": ts(item.updated_at),
        "archived_at": ts(item.archived_at),
        "media_count": count,
    }


def _domain_field(f: Fields, required: bool) -> str | None:
    value = f.string("domain", required=required)
    if value is None:
        return None
    value = value.strip().lower()
    if not valid_domain(value):
        f.add("domain", "hostname", "a host name such as example.com or *.example.com")
        return None
    return value


def _taken(ws: Workspace, domain: str, own_id: str | None) -> None:
    for other in store(ws).domains.values():
        if other.domain == domain and other.id != own_id:
            raise domain_taken()


async def create_domain(ctx: Ctx) -> Resp:
    """POST /v1/privacy-domains {domain}."""
    f = Fields(await read_json(ctx.request))
    domain = _domain_field(f, True)
    f.check()
    assert domain is not None
    with ctx.emu.lock:
        _taken(ctx.ws, domain, None)
        admit_create(ctx.ws)
        item = Domain(id=new_id(), domain=domain)
        store(ctx.ws).domains[item.id] = item
        return Resp(201, {"data": domain_json(ctx.ws, item)})


async def list_domains(ctx: Ctx) -> Resp:
    """GET /v1/privacy-domains?offset=&limit=&order=&domain=&archived=."""
    query = ctx.request.query_params
    offset = query_int(ctx, "offset", 0, 0, 10**9)
    limit = query_int(ctx, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    field, direction = order_of(ctx, ORDERABLE, "created_at.desc")
    archived = query.get("archived")
    if archived not in (None, "", "true", "false"):
        raise validation(Invalid("archived", "oneof", "true false"))
    wanted = query.get("domain")
    with ctx.emu.lock:
        rows = [
            d
            for d in store(ctx.ws).domains.values()
            if (not archived or (d.archived_at is not None) == (archived == "true"))
            and (not wanted or d.domain == wanted.lower())
        ]
        if field == "domain":
            rows.sort(key=lambda d: d.domain)
        elif field == "updated_at":
            rows.sort(key=by_update)
        else:
            rows.sort(key=lambda d: d.created_at)
        if direction == "desc":
            rows.reverse()
        page = rows[offset : offset + limit]
        data = [domain_json(ctx.ws, d) for d in page]
    meta = {
        "offset": offset,
        "limit": limit,
        "total": len(page),
        "total_count": len(rows),
        "order": {field: direction},
        "parent_id": ctx.ws.id,
    }
    return Resp(200, {"meta": meta, "data": data})


def _item(ctx: Ctx) -> Domain:
    item = store(ctx.ws).domains.get(parse_id(ctx.params["domain_id"]))
    if item is None:
        raise not_found("privacy domain")
    return item


async def update_domain(ctx: Ctx) -> Resp:
    """PUT /v1/privacy-domains/:id {domain?, archived?}: only passed fields change."""
    domain_id = parse_id(ctx.params["domain_id"])
    f = Fields(await read_json(ctx.request))
    domain = _domain_field(f, False)
    archived = f.boolean("archived")
    f.check()
    with ctx.emu.lock:
        item = _item(ctx)
        assert item.id == domain_id
        changed = False
        if domain is not None and domain != item.domain:
            _taken(ctx.ws, domain, item.id)
            item.domain = domain
            changed = True
        if archived is not None and archived != (item.archived_at is not None):
            item.archived_at = utcnow() if archived else None
            changed = True
        if changed:
            item.updated_at = utcnow()
        return Resp(200, {"data": domain_json(ctx.ws, item)})


async def delete_domain(ctx: Ctx) -> Resp:
    """DELETE /v1/privacy-domains/:id: permanent."""
    with ctx.emu.lock:
        item = _item(ctx)
        del store(ctx.ws).domains[item.id]
    return Resp(200, {"data": {"success": True}})


def privacy_routes() -> list[Route]:
    """Routes of 4.4."""
    return [
        route("/v1/privacy-domains", {"POST": create_domain, "GET": list_domains}),
        route("/v1/privacy-domains/{domain_id}", {"PUT": update_domain, "DELETE": delete_domain}),
    ]

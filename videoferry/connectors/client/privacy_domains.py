"""Privacy domains (spec 4.4): create, list by offset and limit, update (domain, archived), delete."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from videoferry.connectors.client.live_models import DomainPage, PrivacyDomain
from videoferry.connectors.client.live_support import (
    as_models,
    data_of,
    deleting,
    meta_of,
    order_of,
    read_one,
    segment,
)
from videoferry.connectors.client.transport import Transport
from videoferry.connectors.errors import UnknownOutcomeError
from videoferry.connectors.ids import try_normal_id
from videoferry.connectors.retry import CallKind

__all__ = ["PrivacyDomains", "PrivacyDomain", "DomainPage"]

log = logging.getLogger(__name__)

PATH = "/v1/privacy-domains"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class PrivacyDomains:
    """The workspace's list of privacy domains (host names, `*.<host>` wildcards).

    The spec names no query parameters of the list: `offset`, `limit`, `order` ("<field>.<asc|desc>"),
    `domain` and `archived` are sent as the meta's own names suggest. Create and update answers are read
    whether or not they come in a `{data}` envelope (the spec says only "the created object").
    """

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def create(self, domain: str) -> PrivacyDomain:
        """POST: add a domain; a domain already listed is AlreadyTakenError (400201 in the emulator).

        A create: an unknown outcome raises UnknownOutcomeError (look it up with find(), never repeat).
        """
        if not domain or not domain.strip():
            raise ValueError("domain must not be empty")
        body = self._transport.call(
            "POST",
            PATH,
            operation="create_privacy_domain",
            kind=CallKind.CREATE,
            json_body={"domain": domain},
        )
        return read_one(body, PrivacyDomain, "create_privacy_domain", bare=True)

    def ensure(self, domain: str) -> PrivacyDomain:
        """The listed domain of that name, created when missing; an unknown outcome is resolved by find()."""
        found = self.find(domain)
        if found is not None:
            return found
        try:
            return self.create(domain)
        except UnknownOutcomeError:
            found = self.find(domain)
            if found is None:
                raise
            log.info("create_privacy_domain: outcome unknown, but the domain is listed")
            return found

    def list_domains(
        self,
        *,
        offset: int = 0,
        limit: int = 100,
        order: str | None = None,
        domain: str | None = None,
        archived: bool | None = None,
    ) -> DomainPage:
        """GET: one page (offset from 0, limit per page), filtered by exact domain and/or archived."""
        params: dict[str, Any] = {"offset": offset, "limit": limit}
        if order is not None:
            params["order"] = order
        if domain is not None:
            params["domain"] = domain
        if archived is not None:
            params["archived"] = "true" if archived else "false"
        body = self._transport.call(
            "GET", PATH, operation="list_privacy_domains", kind=CallKind.IDEMPOTENT, params=params
        )
        items = as_models(PrivacyDomain, data_of(body, "list_privacy_domains"), "list_privacy_domains")
        meta = meta_of(body)
        parent = meta.get("parent_id")
        return DomainPage(
            items=items,
            offset=_int(meta.get("offset")),
            limit=_int(meta.get("limit")),
            total=_int(meta.get("total")),
            total_count=_int(meta.get("total_count")),
            order=order_of(meta),
            parent_id=try_normal_id(parent) if isinstance(parent, str) else None,
        )

    def iter_domains(
        self,
        *,
        order: str | None = None,
        domain: str | None = None,
        archived: bool | None = None,
        limit: int = 100,
    ) -> Iterator[PrivacyDomain]:
        """Every matching domain, page by page (one call each), each once.

        The walk advances by the number of items received and ends on an empty page, at total_count, or
        (without total_count) on a page shorter than the limit; a page of nothing new ends it too.
        """
        seen: set[str] = set()
        offset = 0
        while True:
            page = self.list_domains(
                offset=offset, limit=limit, order=order, domain=domain, archived=archived
            )
            if not page.items:
                return
            fresh = [item for item in page.items if item.id not in seen]
            if offset > 0 and not fresh:
                log.warning(
                    "list_privacy_domains: offset %d repeats what was listed; ending the walk", offset
                )
                return
            for item in fresh:
                seen.add(item.id)
                yield item
            offset += len(page.items)
            if page.total_count is not None:
                if offset >= page.total_count:
                    return
            elif len(page.items) < (page.limit or limit):
                return

    def find(self, domain: str) -> PrivacyDomain | None:
        """The listed domain of that name (compared case-insensitively here too), or None."""
        wanted = domain.strip().lower()
        for item in self.iter_domains(domain=wanted):
            if (item.domain or "").lower() == wanted:
                return item
        return None

    def update(
        self, domain_id: str, *, domain: str | None = None, archived: bool | None = None
    ) -> PrivacyDomain:
        """PUT: rename and/or archive (True) or restore (False); only the given fields change. Idempotent."""
        payload: dict[str, Any] = {}
        if domain is not None:
            payload["domain"] = domain
        if archived is not None:
            payload["archived"] = archived
        if not payload:
            raise ValueError("the privacy domain update needs domain or archived")
        body = self._transport.call(
            "PUT",
            f"{PATH}/{segment(domain_id, 'domain_id')}",
            operation="update_privacy_domain",
            kind=CallKind.IDEMPOTENT,
            json_body=payload,
        )
        return read_one(body, PrivacyDomain, "update_privacy_domain", bare=True)

    def archive(self, domain_id: str) -> PrivacyDomain:
        """PUT {archived: true}."""
        return self.update(domain_id, archived=True)

    def restore(self, domain_id: str) -> PrivacyDomain:
        """PUT {archived: false}."""
        return self.update(domain_id, archived=False)

    def delete(self, domain_id: str) -> None:
        """DELETE (permanent); a 404 after an unanswered attempt counts as deleted."""
        self._transport.call(
            "DELETE",
            f"{PATH}/{segment(domain_id, 'domain_id')}",
            operation="delete_privacy_domain",
            kind=CallKind.IDEMPOTENT,
            on_error=deleting("delete_privacy_domain"),
        )

"""`setup up`'s writes of the workspace's objects: privacy domains and DRM callbacks, each exactly once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tasks.lookup import Postponed, find_named
from tasks.setup.changes import Change

if TYPE_CHECKING:
    from connectors.client import VideoClient

T = TypeVar("T")


def one(found: list[T]) -> T | None:
    """The one object found; several (names a service keeps alike): Postponed, nothing is created beside them
    (`setup plan` shows them as a conflict)."""
    if len(found) > 1:
        raise Postponed(f"{len(found)} objects of that name")
    return found[0] if found else None


def _domain(domain: Any) -> str | None:
    return getattr(domain, "domain", None)


def _project(change: Change) -> str | None:
    """The project of a DRM change (None: the workspace's)."""
    return change.label.removeprefix("project ") if change.label != "workspace" else None


class WorkspaceWrites:
    """The domain and DRM handlers of SetupWriter (tasks/setup/up.py), which gives `client` and `write`."""

    client: VideoClient
    write: Callable[..., Any]

    def _find_domain(self, name: str) -> Any:
        """The domain by the server's filter, else unfiltered (a filter is never trusted to find a tidied
        name)."""
        domains = self.client.privacy_domains
        wanted = name.strip().lower()
        filtered = find_named(domains.iter_domains(domain=wanted), name, _domain, fold_case=True)
        return one(filtered or find_named(domains.iter_domains(), name, _domain, fold_case=True))

    def _create_domain(self, change: Change) -> Any:
        domains = self.client.privacy_domains
        return self.write(
            "create_domain",
            change.op_key,
            {"domain": change.label},
            lambda: domains.create(change.label),
            find=lambda: self._find_domain(change.label),
        )

    def _update_domain(self, change: Change) -> Any:
        """A rename (domain), an archive or a restore (archived): PUT, only those fields."""
        domain_id, send = str(change.object_id), dict(change.send)
        return self.write(
            "update_domain",
            change.op_key,
            {"domain": change.label, **send},
            lambda: self.client.privacy_domains.update(domain_id, **send),
        )

    def _delete_domain(self, change: Change) -> Any:
        domain_id = str(change.object_id)
        return self.write(
            "delete_domain",
            change.op_key,
            {"domain": change.label},
            lambda: self.client.privacy_domains.delete(domain_id),
        )

    def _set_drm(self, change: Change) -> Any:
        project = _project(change)
        params = {"project_id": project, "fields": sorted(change.send)}
        target = ("project", project) if project else None
        return self.write(
            "set_drm",
            change.op_key,
            params,
            lambda: self.client.drm.update(project, **change.send),
            target=target,
        )

    _create_drm = _set_drm
    _update_drm = _set_drm

    def _delete_drm(self, change: Change) -> Any:
        """DELETE the callback (--prune); a 404 after an unanswered attempt counts as deleted (the client)."""
        project = _project(change)
        target = ("project", project) if project else None
        return self.write(
            "delete_drm",
            change.op_key,
            {"project_id": project},
            lambda: self.client.drm.delete(project),
            target=target,
        )

"""Setup's changes of the workspace's objects: privacy domains (create, rename, archive, restore, delete) and
the DRM callbacks (set, and delete with --prune); GET only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from connectors.client.live_models import PrivacyDomain
from connectors.desired_state import DesiredState, DomainSpec, DrmSpec
from state.machine import OpStatus
from tasks.setup.changes import CREATE, DELETE, UNCHANGED, UPDATE, Change, ChangeSet, name_key, show, shown

if TYPE_CHECKING:
    from connectors.client import VideoClient
    from state.ledger import Ledger

#: Why an object the file does not declare stays without --prune.
KEPT = "not in the file (kept: --prune deletes it)"


def _domain_change(action: str, label: str, found: PrivacyDomain | None, **send: Any) -> Change:
    """A domain's change: what a write sends (domain, archived) and the fields shown."""
    change = Change(action, "domain", label, op_key=f"setup:domain:{label}:{action}", send=send)
    if found is not None:
        change.object_id = found.id
        now = {"domain": found.domain, "archived": bool(found.archived)}
        change.fields = shown([(k, now[k], v) for k, v in send.items()])
    return change


class WorkspaceComparer:
    """The changes of the workspace's privacy domains and DRM callbacks."""

    def __init__(self, client: VideoClient, ledger: Ledger | None, *, prune: bool = False) -> None:
        self.client = client
        self.ledger = ledger
        self.prune = prune

    def compare(self, changeset: ChangeSet, state: DesiredState) -> None:
        """Domains (when the file has the list), then each DRM callback, then the callbacks to delete."""
        if state.privacy_domains is not None:
            self._domains(changeset, state.privacy_domains)
        for drm in state.drm:
            self._drm(changeset, drm)
        if state.drm_managed:
            self._drm_not_declared(changeset, state.drm)

    # -- privacy domains ------------------------------------------------------------------------------

    def _domains(self, changeset: ChangeSet, wanted: Sequence[DomainSpec]) -> None:
        listed = self.client.privacy_domains.iter_domains()
        have = {name_key(d.domain.lower()): d for d in listed if d.domain}
        asked: set[str] = set()
        for spec in wanted:
            key = name_key(spec.domain)
            asked.add(key)
            found = have.get(key)
            before = have.get(name_key(spec.renamed_from)) if spec.renamed_from else None
            if found is None and before is not None:
                asked.add(name_key(str(spec.renamed_from)))
                send: dict[str, Any] = {"domain": spec.domain}
                if bool(before.archived) != spec.archived:
                    send["archived"] = spec.archived
                change = _domain_change(UPDATE, spec.domain, before, **send)
                change.reason = f"renamed from {before.domain}"
                changeset.changes.append(change)
            elif found is None and spec.archived:
                change = Change(UNCHANGED, "domain", spec.domain, spec.where)
                change.reason = "archived: true, and no such domain: nothing to archive"
                changeset.changes.append(change)
            elif found is None:
                changeset.changes.append(
                    Change(CREATE, "domain", spec.domain, op_key=f"setup:domain:{spec.domain}")
                )
            elif bool(found.archived) != spec.archived:
                changeset.changes.append(_domain_change(UPDATE, spec.domain, found, archived=spec.archived))
            else:
                changeset.changes.append(Change(UNCHANGED, "domain", spec.domain))
        for key, found in sorted(have.items()):
            if key not in asked:
                change = _domain_change(DELETE if self.prune else UNCHANGED, key, found)
                change.reason = "" if self.prune else KEPT
                changeset.changes.append(change)

    # -- DRM callbacks --------------------------------------------------------------------------------

    def _drm(self, changeset: ChangeSet, spec: DrmSpec) -> None:
        label = "workspace" if spec.project_id is None else f"project {spec.project_id}"
        have = self.client.drm.find(spec.project_id)
        send = {"url": spec.url, "username": spec.username, "password": spec.password, "strict": spec.strict}
        send = {k: v for k, v in send.items() if v is not None}
        key = f"setup:drm:{spec.project_id or 'workspace'}"
        if have is None:
            fields = [(k, "-", show(k, v)) for k, v in send.items()]
            changeset.changes.append(
                Change(CREATE, "drm", label, spec.where, fields, op_key=key, send=send, spec=spec)
            )
            return
        diffs = [(k, getattr(have, k), v) for k, v in send.items() if getattr(have, k) != v]
        action = UPDATE if diffs else UNCHANGED
        changed = {k: send[k] for k, _, _ in diffs}
        changeset.changes.append(
            Change(action, "drm", label, spec.where, shown(diffs), op_key=key, send=changed)
        )

    def _drm_not_declared(self, changeset: ChangeSet, declared: Sequence[DrmSpec]) -> None:
        """The workspace's callback, and those of projects this ledger set, when the file (it has a drm key)
        does not declare them: deleted with --prune. A project's callback set by hand is not found: the
        spec lists no projects' callbacks."""
        wanted = {d.project_id for d in declared}
        scopes: list[str | None] = [None]
        if self.ledger is not None:
            for op in self.ledger.ops(kind="set_drm", status=OpStatus.DONE):
                project = op.params.get("project_id")
                if project and project not in scopes:
                    scopes.append(str(project))
        for project in scopes:
            if project in wanted or self.client.drm.find(project) is None:
                continue
            label = "workspace" if project is None else f"project {project}"
            change = Change(DELETE if self.prune else UNCHANGED, "drm", label)
            change.reason = "" if self.prune else KEPT
            change.op_key = f"setup:drm:{project or 'workspace'}:delete"
            change.object_id = project
            changeset.changes.append(change)

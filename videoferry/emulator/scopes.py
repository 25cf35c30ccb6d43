"""Token scopes (spec 5.2; 5.5 does not show them): the model the emulator chose, and its 403 checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from videoferry.emulator.errors import access_denied, bad_token, not_owner
from videoferry.emulator.state import Workspace

if TYPE_CHECKING:
    from videoferry.emulator.app import Ctx

#: Methods a read-only token may send.
READING = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class TokenScope:
    """An extra token of a workspace: limited to some projects, to reading, and/or not the owner's.

    The workspace's own token has no TokenScope: every project, reading and writing, owner.
    """

    project_ids: frozenset[str] | None = None  # None: every project of the workspace
    owner: bool = True
    read_only: bool = False

    def allows_project(self, project_id: str) -> bool:
        """Whether the token reaches objects of this project."""
        return self.project_ids is None or project_id in self.project_ids


def scopes(ws: Workspace) -> dict[str, TokenScope]:
    """The workspace's extra tokens and their scopes (created on first use)."""
    found = ws.extras.get("scopes")
    if not isinstance(found, dict):
        found = {}
        ws.extras["scopes"] = found
    return found


def scope_of(ws: Workspace, token: str) -> TokenScope | None:
    """The scope of a token of the workspace; None for the workspace's own (unlimited) token."""
    return scopes(ws).get(token)


def require_write(ctx: Ctx, method: str) -> None:
    """403 / 100103 when a read-only token sends anything but a read."""
    if ctx.scope is not None and ctx.scope.read_only and method not in READING:
        raise access_denied()


def require_project(ctx: Ctx, project_id: str) -> None:
    """403 / 100103 when the token is limited to other projects."""
    if ctx.scope is not None and not ctx.scope.allows_project(project_id):
        raise access_denied()


def require_parent(ctx: Ctx, parent_id: str | None) -> None:
    """403 / 100103 when a project-or-folder id lies in a project the token does not reach.

    An id that is neither is left to the operation (400236 / 400400 `not exists`).
    """
    if parent_id is None or ctx.scope is None:
        return
    project_id = parent_id if parent_id in ctx.ws.projects else ctx.ws.folders.get(parent_id)
    if project_id is not None:
        require_project(ctx, project_id)


def require_filter(ctx: Ctx, parent_id: str | None) -> None:
    """A list filter naming a project or folder: 401 when it is another workspace's (spec 5.2), 403 outside
    the token's projects; an id that is nobody's is left to the list (an empty one)."""
    if parent_id is None:
        return
    if parent_id not in ctx.ws.projects and parent_id not in ctx.ws.folders:
        if ctx.emu.foreign(ctx.ws, [parent_id]):
            raise bad_token()
        return
    require_parent(ctx, parent_id)


def require_videos(ctx: Ctx, *video_ids: str | None) -> None:
    """403 / 100103 when the token's scope does not reach a video's project (a missing one: 404 later)."""
    if ctx.scope is None:
        return
    for video_id in video_ids:
        video = ctx.ws.videos.get(video_id) if video_id is not None else None
        if video is not None:
            require_project(ctx, video.project_id)


def require_owner(ctx: Ctx) -> None:
    """403 / 100107 when the token is not the workspace owner's."""
    if ctx.scope is not None and not ctx.scope.owner:
        raise not_owner()


def visible_projects(ctx: Ctx) -> frozenset[str] | None:
    """The projects a list may show (None: every one)."""
    return ctx.scope.project_ids if ctx.scope is not None else None

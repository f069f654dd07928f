"""Token scopes: what a personal access token may do.

A session is the person themself and carries every scope; a token carries only the scopes it was
issued with (``kernel.models.SCOPES``). A view that needs a scope lists it in
``required_scopes`` and adds ``TokenHasScope`` to its permissions, or calls ``scope_check``.
"""
from __future__ import annotations

from typing import Any

from rest_framework import permissions

from kernel.errors import Forbidden
from kernel.models import AccessToken


class ScopeMissing(Forbidden):
    """The access token does not carry the scope this needs."""

    error = "scope_required"


def request_scopes(request: Any) -> frozenset[str] | None:
    """The scopes a request is limited to: a token's, or ``None`` (no limit) for a session."""
    token = getattr(request, "auth", None)
    if isinstance(token, AccessToken):
        return frozenset(token.scopes)
    return None


def scope_check(request: Any, scope: str) -> None:
    """Refuse (403 ``scope_required``) a token request whose token lacks ``scope``."""
    scopes = request_scopes(request)
    if scopes is not None and scope not in scopes:
        raise ScopeMissing(f"this access token lacks the {scope} scope", scope=scope)


class TokenHasScope(permissions.BasePermission):
    """Every scope in the view's ``required_scopes`` must be on the token (sessions pass)."""

    def has_permission(self, request, view) -> bool:
        for scope in getattr(view, "required_scopes", ()):
            scope_check(request, scope)
        return True

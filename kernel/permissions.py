"""``ScopedAccess``: DRF's default permission class — signed in, and the view's declared scope.

The rules (and the system check that keeps every view declaring its scopes) are in
``kernel.scopes``. This module must not import ``kernel.errors`` or ``rest_framework.views`` at the
top: DRF imports it while building ``APIView`` itself (``DEFAULT_PERMISSION_CLASSES``), so either
import would be a cycle at start-up; the refusals are imported when a request is checked.
"""

from __future__ import annotations

from typing import Any

from rest_framework import permissions

# The handlers a declaration covers. ``head`` is answered by ``get`` (Django's View does that) and
# ``options`` describes the route without touching data, so neither is declared on its own.
DECLARED_METHODS = ("get", "post", "put", "patch", "delete")


class ScopedAccess(permissions.BasePermission):
    """Signed in, and — for a token — carrying the scope the view declares for this method."""

    def has_permission(self, request: Any, view: Any) -> bool:
        from kernel.scopes import ScopeUndeclared, scope_check

        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401 not_authenticated
        method = request.method.lower()
        handler = "get" if method == "head" else method
        if handler not in DECLARED_METHODS or not hasattr(view, handler):
            return True  # OPTIONS reads no data; a method the view lacks goes on to its 405
        scope = getattr(view, "required_scopes", {}).get(handler)
        if scope is None:
            raise ScopeUndeclared(f"{type(view).__name__} declares no scope for {request.method}")
        scope_check(request, scope)
        return True

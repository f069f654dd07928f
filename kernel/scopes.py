"""Token scopes: what a personal access token may do, declared by every API view per method.

A session is the person themself and carries every scope; a token carries only the scopes it was
issued with (``kernel.models.SCOPES``): ``data:read`` for every read, ``data:write`` for every
record write, ``extensions:deploy`` for deploying extensions and for what seed 000 gives it (driving
processes, deciding held deletes), ``metrics:read`` for ``GET /metrics`` (a Prometheus scraper's).
A token outside its scopes is refused 403 ``{"error": "insufficient_scope", "scope": <the one needed>, "message": …}``.

How it cannot be forgotten: ``kernel.permissions.ScopedAccess`` is DRF's default permission
class, and it needs the view to say which scope each of its handlers needs::

    class RecordDataView(APIView):
        required_scopes = {"post": DATA_WRITE, "patch": DATA_WRITE, "delete": DATA_WRITE}

(a tuple, ``{"get": (DATA_READ, EXTENSIONS_DEPLOY)}``, accepts any one of its scopes).

A handler without a declaration is refused for everyone (403 ``scope_undeclared``), and the
system check ``kernel.E001`` (``kernel.scope_declarations``, run by ``manage.py check``, ``migrate``
and the test that walks the URL resolver) names every such view before it ships. A view that is
deliberately open to anyone (health, sign-in) replaces the permission classes and says why in
``scope_exempt``. Rejected: a scope check at the top of each handler — that is exactly the check
the issue found missing on 27 route × token cells.
"""

from __future__ import annotations

from typing import Any

from kernel.codes import KernelError
from kernel.errors import Forbidden
from kernel.models import AccessToken

DATA_READ = "data:read"
DATA_WRITE = "data:write"
EXTENSIONS_DEPLOY = "extensions:deploy"
METRICS_READ = "metrics:read"  # GET /metrics (turbobase.metrics_view)


class ScopeMissing(Forbidden):
    """The access token does not carry the scope this needs."""

    error: str = KernelError.INSUFFICIENT_SCOPE


class ScopeUndeclared(Forbidden):
    """This route does not declare the scope it needs, so nobody may use it."""

    error: str = KernelError.SCOPE_UNDECLARED


def request_scopes(request: Any) -> frozenset[str] | None:
    """The scopes a request is limited to: a token's, or ``None`` (no limit) for a session."""
    token = getattr(request, "auth", None)
    if isinstance(token, AccessToken):
        return frozenset(token.scopes)
    return None


# What a view declares for one handler: a scope, or a tuple of scopes any one of which will do.
ScopeRule = str | tuple[str, ...]


def scope_alternatives(rule: ScopeRule) -> tuple[str, ...]:
    return (rule,) if isinstance(rule, str) else tuple(rule)


def scope_check(request: Any, rule: ScopeRule) -> None:
    """Refuse (403 ``insufficient_scope``) a token request whose token lacks the scope ``rule`` needs.

    A tuple is "any one of these"; the refusal names the first as ``scope`` (the one to ask for).
    """
    scopes = request_scopes(request)
    alternatives = scope_alternatives(rule)
    if scopes is not None and not scopes.intersection(alternatives):
        raise ScopeMissing(
            f"this access token lacks the {' or '.join(alternatives)} scope", scope=alternatives[0]
        )

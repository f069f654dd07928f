"""System check ``kernel.E001``: every API view declares a scope for every handler it has.

Apart from ``kernel.scopes`` (the rules) so the import runs one way: this reads the declarations
``kernel.permissions.ScopedAccess`` enforces, and ``kernel.permissions`` reads ``kernel.scopes``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core import checks
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from kernel.models import SCOPES
from kernel.permissions import DECLARED_METHODS, ScopedAccess
from kernel.scopes import scope_alternatives

API_PREFIX = "v1/"


def _api_views(patterns: list, prefix: str = "") -> Iterator[tuple[str, type[APIView], dict]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _api_views(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            cls = getattr(entry.callback, "cls", None)
            if isinstance(cls, type) and issubclass(cls, APIView):
                yield prefix + str(entry.pattern), cls, getattr(entry.callback, "initkwargs", {})


def api_routes(urlconf: str | None = None) -> list[tuple[str, type[APIView], dict]]:
    """Every DRF view under ``/v1``: ``(route pattern, view class, as_view() kwargs)``."""
    return [
        r for r in _api_views(get_resolver(urlconf).url_patterns) if r[0].startswith(API_PREFIX)
    ]


def view_scope_problems(cls: type[APIView]) -> list[str]:
    """What is wrong with ``cls``'s scope declaration (empty: nothing)."""
    if getattr(cls, "scope_exempt", ""):
        return []
    if not any(isinstance(p, type) and issubclass(p, ScopedAccess) for p in cls.permission_classes):
        return [
            f"{cls.__name__}: permission_classes leave out ScopedAccess and it sets no scope_exempt"
        ]
    declared = getattr(cls, "required_scopes", {})
    problems = [
        f"{cls.__name__}.{m}() declares no scope in required_scopes"
        for m in DECLARED_METHODS
        if hasattr(cls, m) and m not in declared
    ]
    problems += [
        f"{cls.__name__}.required_scopes[{m!r}]: no such handler"
        for m in declared
        if m not in DECLARED_METHODS or not hasattr(cls, m)
    ]
    problems += [
        f"{cls.__name__}.required_scopes[{m!r}]: unknown scope {s!r}"
        for m, rule in declared.items()
        for s in scope_alternatives(rule)
        if s not in SCOPES
    ]
    return problems


def scope_declarations_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """System check ``kernel.E001``: every API view declares a scope for every handler."""
    seen: set[type] = set()
    errors: list[checks.CheckMessage] = []
    for route, cls, _ in api_routes():
        if cls in seen:
            continue
        seen.add(cls)
        errors += [
            checks.Error(
                problem, hint=f"route /{route}; see kernel.scopes", obj=cls, id="kernel.E001"
            )
            for problem in view_scope_problems(cls)
        ]
    return errors

"""The user a request acts for, as the rooms' services take it.

Services annotate ``django.contrib.auth.models.User``: the instance keeps Django's own user model
(``AUTH_USER_MODEL`` is not swapped). A view's ``request.user`` is typed ``User | AnonymousUser``;
its permission classes refuse anonymous requests before the view body runs, and ``acting_user``
says so in one place instead of every view casting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request

from kernel.errors import AdminRequired


def acting_user(request: HttpRequest | Request) -> User:
    """``request.user`` once authentication has passed; 401 if a view let an anonymous one through."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise NotAuthenticated()
    return user


def admin_check(request: HttpRequest | Request, message: str) -> None:
    """Refuse (403 ``admin_required``, saying ``message``) a request whose user is not staff."""
    if not getattr(request.user, "is_staff", False):
        raise AdminRequired(message)


_operator: ContextVar[User | None] = ContextVar("kernel_operator", default=None)


@contextmanager
def operator_acting(user: object) -> Iterator[None]:
    """Name the operator behind what the block does (an admin screen's delete, say), for services
    reached through Django's signals, which carry no request (``operator_current``)."""
    token = _operator.set(user if isinstance(user, User) and user.is_authenticated else None)
    try:
        yield
    finally:
        _operator.reset(token)


def operator_current() -> User | None:
    """The operator named by the innermost ``operator_acting`` block; ``None`` outside any (a shell)."""
    return _operator.get()

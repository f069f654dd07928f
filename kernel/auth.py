"""API authentication: bearer personal access tokens, and Django sessions with CSRF.

Two ways in, tried in this order by every DRF view (settings ``DEFAULT_AUTHENTICATION_CLASSES``):
``Authorization: Bearer <token>`` (``request.auth`` is the ``AccessToken``), then the session cookie
from ``POST /v1/auth/session`` (``request.auth`` is ``None``; unsafe methods need ``X-CSRFToken``).
Bearer comes first so that its ``WWW-Authenticate`` header turns "no credentials" into a 401
rather than DRF's 403. Scope checks live in ``kernel.scopes``.

A token's ``last_used_at`` is kept to the minute (``LAST_USED_EVERY``): a request writes it only when
the stored time is older than that, so a stream of reads does not UPDATE the token row each time.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from rest_framework import authentication, exceptions

from kernel.models import AccessToken, token_hash

# How stale a token's last_used_at may get before a request writes it again.
LAST_USED_EVERY = timedelta(minutes=1)


def token_used(token: AccessToken) -> None:
    """Note the use when the stored time is older than ``LAST_USED_EVERY`` (or there is none).

    The UPDATE is conditional too, so two requests racing past the check write it once."""
    now = timezone.now()
    stale = now - LAST_USED_EVERY
    if token.last_used_at is not None and token.last_used_at > stale:
        return
    is_stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale)
    if AccessToken.objects.filter(is_stale, pk=token.pk).update(last_used_at=now):
        token.last_used_at = now


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <token>``; ``request.auth`` is the AccessToken."""

    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if parts[0].lower() != self.keyword.lower():
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'")
        token = (
            AccessToken.objects.select_related("user")
            .filter(token_hash=token_hash(parts[1]), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        token_used(token)
        return token.user, token

    def authenticate_header(self, request) -> str:
        return self.keyword


class CsrfSessionAuthentication(authentication.SessionAuthentication):
    """Session cookie auth; unsafe methods need the CSRF token in ``X-CSRFToken`` as Django expects."""

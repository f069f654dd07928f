"""Personal access tokens: hashed at rest, shown once, with scopes."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from kernel.codes import KernelCode
from kernel.errors import InvalidRequest

TOKEN_PREFIX = "tbp_"
SCOPES = ("extensions:deploy", "data:read", "data:write", "metrics:read")


class ScopeUnknown(InvalidRequest):
    """That scope does not exist."""

    code = KernelCode.SCOPE_UNKNOWN


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class AccessToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # first characters, to tell tokens apart in the admin
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "access_token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


def token_issue(*, user, scopes: list[str], name: str = "") -> tuple[AccessToken, str]:
    """Create a token; the raw value is returned once and never stored."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ScopeUnknown(
            f"unknown scope(s): {', '.join(unknown)}; known: {', '.join(SCOPES)}", field="scopes"
        )
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = AccessToken.objects.create(
        user=user, name=name, token_hash=token_hash(raw), prefix=raw[:10], scopes=list(scopes)
    )
    return token, raw


def token_revoke(*, token: AccessToken) -> AccessToken:
    """Revoke a token for good; a revoked token authenticates nothing (401)."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


class SignInFailure(models.Model):
    """Failed sign-ins from one client address in the current window (``kernel.sign_in``): for one
    username (``username`` set), or for every username together (``username`` empty — no sign-in
    can name the empty username, both sign-in forms refuse it first).

    One row per (address, username), unique, counted with ``F()`` updates, so every web process
    counts into the same row and agrees on the lockout; nothing lives in a per-process cache.
    """

    username = models.CharField(max_length=150, blank=True)
    address = models.CharField(max_length=64)
    failures = models.PositiveIntegerField(default=0)
    first_failed_at = models.DateTimeField(db_index=True)
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "sign_in_failure"
        verbose_name = "sign-in lockout"
        constraints = [
            models.UniqueConstraint(
                fields=["address", "username"], name="sign_in_failure_address_username"
            )
        ]

    def __str__(self) -> str:
        who = self.username or "any username"
        return f"{who} from {self.address}: {self.failures} failed sign-in(s)"


from kernel.audit import AuditEvent  # noqa: E402,F401  (the audit trail's model, for Django to find)

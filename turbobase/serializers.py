"""Shapes of ``/v1/auth/session`` and ``/v1/health``, for the OpenAPI schema.

The views render these bodies themselves; ``tests/turbobase/test_openapi.py`` checks real answers
against the classes here.
"""

from __future__ import annotations

from rest_framework import serializers


class SignInIn(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class SignedInOut(serializers.Serializer):
    """Signed in: who you are, and the CSRF token unsafe requests send in ``X-CSRFToken``."""

    username = serializers.CharField()
    isAdmin = serializers.BooleanField()
    csrfToken = serializers.CharField()


class WhoAmIOut(serializers.Serializer):
    """Who the session or the bearer token is. A token answers its scopes, a session its CSRF token."""

    username = serializers.CharField()
    isAdmin = serializers.BooleanField()
    via = serializers.ChoiceField(choices=("session", "token"))
    scopes = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Only when signed in with a token."
    )
    csrfToken = serializers.CharField(
        required=False, help_text="Only when signed in with a session."
    )


class HealthOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=("ok",))
    database = serializers.CharField(help_text="The database vendor: sqlite or postgresql.")


class LiveOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=("ok",))


class ReadyCheckOut(serializers.Serializer):
    ok = serializers.BooleanField()
    message = serializers.CharField(required=False, help_text="Why it is not ok.")


class ReadyChecksOut(serializers.Serializer):
    database = ReadyCheckOut()
    migrations = ReadyCheckOut()
    broker = ReadyCheckOut()
    workers = ReadyCheckOut()


class ReadyOut(serializers.Serializer):
    """200 when every check is ok, else 503 with the same body."""

    status = serializers.ChoiceField(choices=("ready", "unready"))
    checks = ReadyChecksOut()
    clusters = serializers.ListField(
        child=serializers.CharField(),
        help_text="The worker clusters (lane@host) seen alive in the last 60 s.",
    )

"""The kernel's screens: access tokens (listed and revoked) and the audit trail (read only).

Users and groups are Django's own screens, except that a deletion names the operator who made it:
the rooms' ``pre_delete`` receivers (the records a user owned, released and audited) see who.

A token is issued with ``manage.py tb_token``: the raw token is shown once, by the command that
issues it; the admin only ever sees the hash and the first characters, so nothing here can leak a
usable token. The audit trail is evidence: nobody adds, edits or deletes an event here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db.models import QuerySet
from django.http import HttpRequest

from kernel.audit import AuditEvent
from kernel.models import AccessToken, token_revoke
from kernel.users import operator_acting


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    list_display = (
        "prefix",
        "user",
        "name",
        "scope_list",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "name", "user__username")
    readonly_fields = (
        "user",
        "name",
        "prefix",
        "token_hash",
        "scopes",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    actions = ("revoke_selected",)

    @admin.display(description="scopes")
    def scope_list(self, token: AccessToken) -> str:
        return ", ".join(token.scopes)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Issuing needs to show the raw value once; the command does that, the admin cannot.
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> None:
        count = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token_revoke(token=token)
            count += 1
        self.message_user(request, f"{count} token(s) revoked", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "actor_name", "action", "target", "reason")
    list_filter = (
        "action",
        ("at", admin.DateFieldListFilter),
        ("actor", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("action", "target", "actor_name", "reason")
    date_hierarchy = "at"
    ordering = ("-at", "-id")
    fields = ("at", "actor_name", "action", "target", "before", "after", "reason")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditEvent | None = None) -> bool:
        return False


class OperatorDeletes:
    """A deletion (one, or the bulk action) runs with the operator named (``operator_acting``)."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with operator_acting(request.user):
            super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        with operator_acting(request.user):
            super().delete_queryset(request, queryset)  # type: ignore[misc]


class OperatorUserAdmin(OperatorDeletes, UserAdmin):
    pass


class OperatorGroupAdmin(OperatorDeletes, GroupAdmin):
    pass


for _model, _model_admin in ((User, OperatorUserAdmin), (Group, OperatorGroupAdmin)):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
    admin.site.register(_model, _model_admin)

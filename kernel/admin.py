"""The kernel's screens: access tokens (listed and revoked) and the audit trail (read only).

Sign-in lockouts are listed (who, from where, how many failures, locked until when) and an
administrator unlocks one or many — the action forgets their counts, audited (``sign_in.unlocked``).

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
from kernel.models import AccessToken, SignInFailure, token_revoke
from kernel.sign_in import sign_in_unlock
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


@admin.register(SignInFailure)
class SignInFailureAdmin(admin.ModelAdmin):
    list_display = ("who", "address", "failures", "first_failed_at", "locked_until")
    search_fields = ("username", "address")
    ordering = ("-first_failed_at",)
    fields = ("username", "address", "failures", "first_failed_at", "locked_until")
    readonly_fields = fields
    actions = ("unlock_selected",)

    @admin.display(description="username", ordering="username")
    def who(self, row: SignInFailure) -> str:
        return row.username or "(every username: the address's own count)"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # unlocking is the action, which is audited; a bare delete would not be

    @admin.action(description="Unlock selected (forget their failed sign-ins)")
    def unlock_selected(self, request: HttpRequest, queryset: QuerySet[SignInFailure]) -> None:
        count = sign_in_unlock(rows=queryset, by=request.user)
        self.message_user(request, f"{count} sign-in lockout(s) unlocked", messages.SUCCESS)


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

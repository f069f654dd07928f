"""The module store in the admin: read-only. Code reaches the store only through a deploy, which
validates it; editing a stored source here would serve code nothing checked."""
from __future__ import annotations

from django.contrib import admin

from extensions.models import ExtensionModule, ExtensionVersion


class ExtensionVersionInline(admin.TabularInline):
    model = ExtensionVersion
    fields = ("version", "entry", "sha256", "deployed_by", "deployed_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-version",)

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ExtensionModule)
class ExtensionModuleAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "version", "status", "updated_at")
    list_filter = ("kind", "status")
    search_fields = ("id",)
    readonly_fields = ("id", "kind", "version", "status", "definition", "updated_at")
    inlines = [ExtensionVersionInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ExtensionVersion)
class ExtensionVersionAdmin(admin.ModelAdmin):
    list_display = ("module", "version", "sha256", "deployed_by", "deployed_at")
    list_filter = ("module__kind",)
    readonly_fields = ("module", "version", "entry", "sha256", "deployed_by", "deployed_at", "source",
                       "compiled", "definition")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

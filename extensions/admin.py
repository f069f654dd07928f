"""The module store in the admin: read-only. Code reaches the store only through a deploy, which
validates it; editing a stored source here would serve code nothing checked.

Sources are shown as code (each file in a ``<pre>``, escaped once by ``format_html``), not as the
JSON they are stored in, where every newline would read ``\\n``.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.utils.html import format_html, format_html_join

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
    list_display = ("module", "version", "sha", "deployed_by", "deployed_at")
    list_filter = ("module__kind",)
    fields = (
        "module",
        "version",
        "entry",
        "sha256",
        "deployed_by",
        "deployed_at",
        "source_code",
        "compiled_code",
        "definition_shown",
    )
    readonly_fields = fields

    @admin.display(description="sha256")
    def sha(self, obj: ExtensionVersion) -> str:
        return obj.sha256[:12]  # enough to tell versions apart; the page has all 64

    @admin.display(description="source")
    def source_code(self, obj: ExtensionVersion) -> str:
        return _files(obj.source if isinstance(obj.source, dict) else {})

    @admin.display(description="compiled (CommonJS)")
    def compiled_code(self, obj: ExtensionVersion) -> str:
        compiled = obj.compiled if isinstance(obj.compiled, dict) else {}
        return _files({path: (part or {}).get("code", "") for path, part in compiled.items()})

    @admin.display(description="definition")
    def definition_shown(self, obj: ExtensionVersion) -> str:
        return _code(json.dumps(obj.definition, indent=2, ensure_ascii=False, sort_keys=True))

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def _code(text: Any) -> str:
    return format_html('<pre style="white-space: pre-wrap; max-width: 100%">{}</pre>', str(text))


def _files(files: dict[str, Any]) -> str:
    """Each file under its path, as code."""
    shown = ((path, _code(text)) for path, text in sorted(files.items()))
    return format_html_join("", "<p><code>{}</code></p>{}", shown)

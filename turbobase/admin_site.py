"""The admin as the product's own: Turbobase's name, an operator's dashboard, django-q2 as "Workers".

``TurbobaseAdminConfig`` replaces ``django.contrib.admin`` in ``INSTALLED_APPS`` so the one
``admin.site`` every room registers on is this site (Django's documented way to swap the default
site). Nothing here imports a model at load time: the app registry loads this module first.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest
from django.template.response import TemplateResponse

from kernel.deployment import instance_name

PRODUCT = "Turbobase"
WORKERS_APP = "django_q"


def instance_title() -> str:
    """ "Turbobase", or "Turbobase · <instance name>" when the instance is named otherwise."""
    name = instance_name()
    return PRODUCT if name in ("", PRODUCT) else f"{PRODUCT} · {name}"


class TurbobaseAdminSite(admin.AdminSite):
    site_url = "/"  # "View site": the home page (turbobase.home)
    index_title = "Operations"
    index_template = "admin/turbobase/index.html"

    # Read per request, not at import: the instance name is a setting (STYLE: settings lazily).
    @property
    def site_header(self) -> str:  # type: ignore[override]
        return instance_title()

    @property
    def site_title(self) -> str:  # type: ignore[override]
        return instance_title()

    def get_app_list(
        self, request: HttpRequest, app_label: str | None = None
    ) -> list[dict[str, Any]]:
        # django-q2's screens are the workers' bookkeeping: one "Workers" section, at the end.
        apps = super().get_app_list(request, app_label)
        for app in apps:
            if app["app_label"] == WORKERS_APP:
                app["name"] = "Workers"
        return sorted(apps, key=lambda app: app["app_label"] == WORKERS_APP)

    def index(self, request: HttpRequest, extra_context: dict | None = None) -> TemplateResponse:
        from turbobase.dashboard import dashboard_tiles, last_purge  # models: not at load time

        context = {
            "dashboard": dashboard_tiles(request, self),
            "last_purge": last_purge(request, self),
            **(extra_context or {}),
        }
        return super().index(request, extra_context=context)


class TurbobaseAdminConfig(AdminConfig):
    default_site = "turbobase.admin_site.TurbobaseAdminSite"

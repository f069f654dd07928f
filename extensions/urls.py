from django.urls import path

from extensions.views import (
    ExtensionBundleApplyView,
    ExtensionBundlePlanView,
    ExtensionDetailView,
    ExtensionLintView,
    ExtensionListView,
)

urlpatterns = [
    path("extensions", ExtensionListView.as_view(), name="extension-list"),
    path("extensions/lint", ExtensionLintView.as_view(), name="extension-lint"),
    path("extensions/bundle/plan", ExtensionBundlePlanView.as_view(), name="extension-bundle-plan"),
    path(
        "extensions/bundle/apply", ExtensionBundleApplyView.as_view(), name="extension-bundle-apply"
    ),
    path("extensions/<str:module_id>", ExtensionDetailView.as_view(), name="extension-detail"),
]

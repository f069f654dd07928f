from django.urls import path

from guardrails.views import SettingsView

urlpatterns = [
    path("settings", SettingsView.as_view(), name="settings"),
]

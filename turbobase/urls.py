from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from turbobase.favicon import favicon
from turbobase.health import LiveView, ReadyView
from turbobase.home import home
from turbobase.metrics_view import MetricsView
from turbobase.views import HealthView, SessionView

urlpatterns = [
    path("", home, name="home"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("v1/auth/session", SessionView.as_view(), name="auth-session"),
    path("v1/health", HealthView.as_view(), name="health"),
    path("v1/health/live", LiveView.as_view(), name="health-live"),
    path("v1/health/ready", ReadyView.as_view(), name="health-ready"),
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("v1/", include("kernel.urls")),
    path("v1/", include("records.urls")),
    path("v1/", include("records.rest.urls")),
    path("v1/", include("guardrails.urls")),
    path("v1/", include("records.held_deletes.urls")),
    path("v1/", include("extensions.urls")),
    path("v1/", include("sources.urls")),
    path("v1/", include("processes.urls")),
    path("api/schema", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]

handler500 = "turbobase.unavailable.server_error"
handler404 = "turbobase.api_errors.not_found"
handler400 = "turbobase.api_errors.bad_request"

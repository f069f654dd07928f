from django.urls import path

from kernel.audit_views import AuditEventListView

urlpatterns = [
    path("audit", AuditEventListView.as_view(), name="audit-list"),
]

from django.urls import path

from sources.views import SourcesView

urlpatterns = [
    path("sources", SourcesView.as_view(), name="sources"),
]

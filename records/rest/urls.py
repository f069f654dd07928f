from django.urls import re_path

from records.rest.views import RestReadView

# Everything under rest/ reaches the view, so rpc/ and malformed paths are refused by name.
urlpatterns = [
    re_path(r"^rest/(?P<resource>.*)$", RestReadView.as_view(), name="rest-read"),
]

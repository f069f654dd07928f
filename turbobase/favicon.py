"""``/favicon.ico``: browsers ask for it on every page; answer with the instance's icon, not a 404
(a 404 here is a console error on every admin page)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    return HttpResponseRedirect(static("turbobase/favicon.svg"))

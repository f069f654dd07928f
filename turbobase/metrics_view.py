"""``GET /metrics``: the instance's Prometheus metrics, in the text exposition format.

Who may read it: a request from an address in ``TURBOBASE_METRICS_ALLOW`` (the scraper's, e.g.
``127.0.0.1`` or ``10.0.0.0/8``; none by default), a token carrying ``metrics:read``, or an
administrator's session. Anyone else: 401 (no credentials) or 403, in JSON as every refusal.

One scrape sums every process's counters (``kernel.metrics``: prometheus-client's multiprocess
mode) and reads the database gauges (``turbobase.metrics_collector``) at that moment.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import cache
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from kernel.errors import AdminRequired
from kernel.metrics import multiproc_dir
from kernel.permissions import ScopedAccess
from kernel.scopes import METRICS_READ, request_scopes
from turbobase.metrics_collector import DatabaseCollector

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _allowed_networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def address_allowed(address: str) -> bool:
    """Whether ``address`` (the peer's, ``REMOTE_ADDR``) is in ``TURBOBASE_METRICS_ALLOW``."""
    try:
        peer = ipaddress.ip_address(address)
    except ValueError:
        return False
    networks = _allowed_networks(tuple(settings.TURBOBASE_METRICS_ALLOW))
    return any(peer in network for network in networks)


class MetricsAccess(ScopedAccess):
    """An allowed address; else signed in with ``metrics:read`` (a session: an administrator's)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if address_allowed(request.META.get("REMOTE_ADDR", "")):
            return True
        if not super().has_permission(request, view):
            return False
        if request_scopes(request) is None and not request.user.is_staff:
            raise AdminRequired("metrics are for administrators and tokens with metrics:read")
        return True


class JSONRefusals(BaseContentNegotiation):
    """A scraper asks for text/plain; the only thing rendered here is a refusal, in JSON."""

    def select_renderer(
        self, request: Any, renderers: Iterable[BaseRenderer], format_suffix: Any = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type

    def select_parser(self, request: Any, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)


def metrics_text() -> bytes:
    """Every process's counters and histograms, and the database gauges, as one exposition."""
    registry = CollectorRegistry()
    if multiproc_dir() is not None:
        multiprocess.MultiProcessCollector(registry)
    else:  # one process counts alone (PROMETHEUS_MULTIPROC_DIR set empty)
        registry.register(_Default())
    registry.register(DatabaseCollector())
    return generate_latest(registry)


class _Default:
    def collect(self) -> Any:
        return REGISTRY.collect()


class MetricsView(APIView):
    permission_classes = [MetricsAccess]
    required_scopes = {"get": METRICS_READ}
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JSONRefusals

    @extend_schema(exclude=True)  # the Prometheus format, not the API's JSON
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)

"""OpenTelemetry traces, recorded only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

``tracing_setup()`` (each process, at start: ``turbobase.apps``) installs the SDK's tracer
provider with the OTLP/HTTP exporter (which reads the standard ``OTEL_*`` variables) and the Django
instrumentation: a span per HTTP request. The processes room adds a span per run slice and one
per step (``processes.observe``). Unset, the API's no-op tracer records nothing and costs nothing.

The batch processor re-creates its export thread in a forked child (the SDK registers that with
``os.register_at_fork``), so django-q2's forked workers and gunicorn's export their own spans.
"""

from __future__ import annotations

import os

from opentelemetry import trace

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACER_NAME = "turbobase"

_set_up = False


def tracing_wanted() -> bool:
    return bool(os.environ.get(ENDPOINT_ENV, "").strip())


def tracing_setup() -> bool:
    """Install the exporter and the Django instrumentation once (False: tracing is off)."""
    global _set_up
    if _set_up or not tracing_wanted():
        return _set_up
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = os.environ.get("OTEL_SERVICE_NAME", "turbobase")
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    _set_up = True
    return True


def tracer() -> trace.Tracer:
    return trace.get_tracer(TRACER_NAME)


def trace_id_hex(span: trace.Span | None = None) -> str:
    """The trace id of ``span`` (default: the current one) as 32 hex digits; "" when none records."""
    context = (span or trace.get_current_span()).get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""


def tracing_flush(timeout_ms: int = 5000) -> None:
    """Export what is batched (a process about to exit)."""
    provider = trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if flush is not None:
        flush(timeout_ms)

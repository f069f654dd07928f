from django.apps import AppConfig
from django.core import checks
from django.core.signals import request_finished


class KernelConfig(AppConfig):
    name = "kernel"
    verbose_name = "Access"

    def ready(self) -> None:
        import kernel.openapi  # noqa: F401  (registers the security schemes with drf-spectacular)
        from kernel.request_observe import request_id_forget
        from kernel.scope_declarations import scope_declarations_check
        from kernel.tracing import tracing_setup

        tracing_setup()  # only when OTEL_EXPORTER_OTLP_ENDPOINT is set
        request_finished.connect(request_id_forget, dispatch_uid="kernel.request_id_forget")

        # Every API view declares a scope per handler, or `manage.py check`/`migrate` refuse.
        checks.register(scope_declarations_check, checks.Tags.security)

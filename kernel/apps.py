from django.apps import AppConfig


class KernelConfig(AppConfig):
    name = "kernel"
    verbose_name = "Access"

    def ready(self) -> None:
        import kernel.openapi  # noqa: F401  (registers the security schemes with drf-spectacular)

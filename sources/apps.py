from __future__ import annotations

from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Connected sources"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from records.signals import outbound_write_queued

        outbound_write_queued.connect(_on_outbound_write_queued, dispatch_uid="sources.outbound_wake")


def _on_outbound_write_queued(sender, *, record_type: str, **kwargs) -> None:
    from sources.wakeups import outbound_wake

    outbound_wake(record_type=record_type)

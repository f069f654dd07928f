from __future__ import annotations

from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Connected sources"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from guardrails.patterns import pattern_names_register
        from kernel.system_schedules import system_schedule_declare
        from records.signals import outbound_write_queued
        from sources.wakeups import SWEEP_SCHEDULE, SWEEP_TASK

        # Every minute: wake any lane with due work and nobody draining it (a lost wake-up, a
        # broker that was down at commit, a worker that died holding a lane).
        system_schedule_declare(SWEEP_SCHEDULE, SWEEP_TASK)

        # sources.<name>.max_per_second and .max_in_flight are listed for every catalog source.
        pattern_names_register("sources", _source_names)

        outbound_write_queued.connect(
            _on_outbound_write_queued, dispatch_uid="sources.outbound_wake"
        )


def _on_outbound_write_queued(sender, *, record_type: str, **kwargs) -> None:
    from sources.wakeups import outbound_wake

    outbound_wake(record_type=record_type)


def _source_names() -> list[str]:
    from records.catalog import catalog_load

    try:
        return list(catalog_load().sources)
    except (OSError, ValueError):  # no catalog (yet), or a broken one: no per-source rows to list
        return []

from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    name = "guardrails"
    verbose_name = "Compliance"

    def ready(self) -> None:
        from django.core.signals import request_started
        from django.db.models.signals import post_delete, post_save
        from django_q.signals import pre_execute

        from guardrails.cache import cache_boundary
        from guardrails.models import GuardrailRule, InstanceSetting
        from guardrails.rules import rules_cache_clear
        from guardrails.settings import settings_cache_clear

        for model, clear in (
            (GuardrailRule, rules_cache_clear),
            (InstanceSetting, settings_cache_clear),
        ):
            post_save.connect(
                clear, sender=model, dispatch_uid=f"guardrails.cache.{model.__name__}.save"
            )
            post_delete.connect(
                clear, sender=model, dispatch_uid=f"guardrails.cache.{model.__name__}.delete"
            )
        # A request or a worker task (a run's delivery, a sweep) begins: the settings it reads are
        # re-read once, so it sees every change committed before it, in whatever process.
        request_started.connect(cache_boundary, dispatch_uid="guardrails.cache.request")
        pre_execute.connect(cache_boundary, dispatch_uid="guardrails.cache.task")

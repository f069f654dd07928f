from django.apps import AppConfig


class GuardrailsConfig(AppConfig):
    name = "guardrails"
    verbose_name = "Compliance"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

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

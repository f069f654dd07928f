from django.apps import AppConfig


class InstanceSettingsConfig(AppConfig):
    name = "guardrails.instance_settings"
    label = "instance_settings"
    verbose_name = "Settings"

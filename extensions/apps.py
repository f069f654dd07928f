from django.apps import AppConfig


class ExtensionsConfig(AppConfig):
    name = "extensions"

from django.apps import AppConfig


class TurbobaseConfig(AppConfig):
    """The project shell: settings, urls, the CLI and management commands. Nothing imports it."""

    name = "turbobase"
    verbose_name = "Turbobase"

from django.apps import AppConfig


class TurbobaseConfig(AppConfig):
    name = "turbobase"
    verbose_name = "Access"

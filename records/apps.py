from django.apps import AppConfig


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "Records"

    def ready(self) -> None:
        # Deployed defineHook extensions: validated as kind 'hook' at deploy, served to the
        # boundary's hook slots from the module store.
        from extensions.kinds import kind_register
        from records.extension_hooks import deployed_hooks, hook_contract_check
        from records.hooks import provider_register
        from records.releases import releases_connect
        from records.rest.resources import resource_register
        from records.rest.write_states import WRITE_STATE_RESOURCE

        kind_register("hook", hook_contract_check)
        provider_register(deployed_hooks)
        resource_register(WRITE_STATE_RESOURCE)
        # A user or group deleted: its records released through the door first, audited.
        releases_connect()

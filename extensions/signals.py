"""Signals the extensions room sends; higher rooms connect in ready()."""

from django.dispatch import Signal

# Sent inside the deploy transaction with module=ExtensionModule, outcome=<a models.DeployOutcome>.
extension_deployed = Signal()
# Sent inside the remove transaction with module_id=…, kind=…; a receiver may raise to refuse.
extension_removing = Signal()

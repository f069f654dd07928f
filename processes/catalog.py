"""Where the processes room reads deployed process definitions (the extension store)."""

from __future__ import annotations

from extensions.models import ExtensionKind, ExtensionModule, ExtensionStatus
from processes.errors import ProcessNotFound


def process_module_get(process_id: str) -> ExtensionModule:
    """The served module of a deployed process, or 404 ``process_not_found``."""
    module = ExtensionModule.objects.filter(
        id=process_id, kind=ExtensionKind.PROCESS, status=ExtensionStatus.ACTIVE
    ).first()
    if module is None:
        raise ProcessNotFound(f"no deployed process has the id {process_id!r}", id=process_id)
    return module

"""Keep the ``Process`` rows (switch, description) in step with the deployed process modules."""

from __future__ import annotations

from typing import Any

from processes.models import Process


def process_sync_from_module(sender: Any = None, *, module: Any, **kwargs: Any) -> None:
    """A deployed process gets its Process row (enabled on first deploy; the switch is kept)."""
    if module.kind != "process":
        return
    definition = module.definition or {}
    Process.objects.update_or_create(
        id=module.id,
        defaults={
            "description": definition.get("description") or "",
            "is_migration": definition.get("eachRow") is not None,
        },
    )

"""The module store: every deployed version of every extension, and which one is served."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ExtensionKind(models.TextChoices):
    PROCESS = "process"
    HOOK = "hook"


class ExtensionStatus(models.TextChoices):
    ACTIVE = "active"
    REMOVED = "removed"


class DeployOutcome(models.TextChoices):
    """What a deploy did to one id (the answer's ``outcome``); not stored."""

    WRITTEN = "written"  # a new id
    DUPLICATE = "duplicate"  # the id was deployed: this version replaced it
    UNCHANGED = "unchanged"  # a bundle's module whose source did not change: nothing written


class ExtensionModule(models.Model):
    """One extension id and the version served for it."""

    id = models.CharField(max_length=200, primary_key=True)
    kind = models.CharField(max_length=16, choices=ExtensionKind.choices)
    status = models.CharField(
        max_length=16, choices=ExtensionStatus.choices, default=ExtensionStatus.ACTIVE
    )
    version = models.PositiveIntegerField()  # the version served now
    definition = models.JSONField()  # the described default export (functions as markers)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "extension_module"

    def __str__(self) -> str:
        return f"{self.kind} {self.id} v{self.version} ({self.status})"


class ExtensionVersion(models.Model):
    """One deploy: the source as sent, the compiled CommonJS per file, who and when."""

    id = models.BigAutoField(primary_key=True)
    module = models.ForeignKey(ExtensionModule, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    entry = models.CharField(max_length=255)
    source = models.JSONField()  # {path: source text}
    compiled = models.JSONField()  # {path: {"code": commonjs, "imports": {specifier: path}}}
    definition = models.JSONField()
    sha256 = models.CharField(max_length=64)
    deployed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    deployed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "extension_version"
        constraints = [
            models.UniqueConstraint(fields=["module", "version"], name="extension_version_unique")
        ]

    def __str__(self) -> str:
        return f"{self.module_id} v{self.version}"

"""Shapes of ``/v1/extensions``: the one input serializer the views parse with, and the answers.

``BundleIn`` parses a single deploy or lint. The bundle bodies are parsed by
``extensions.bundle`` (which names ``modules[i].…`` at fault) and the answers are rendered by the
services; the classes below say the same shapes to the OpenAPI schema, and
``tests/turbobase/test_openapi.py`` checks real answers against them.

A bundle carries parts that higher rooms own (``schedules``: the processes room). A part that
gives ``request_serializer`` and ``change_serializer`` is documented here without this room
importing it: ``BundlePartFields`` adds the registered parts' fields when the schema is built.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from extensions.bundle_parts import PlanChange, bundle_parts
from extensions.models import DeployOutcome, ExtensionKind, ExtensionStatus

DEPLOY_OUTCOMES = (DeployOutcome.WRITTEN.value, DeployOutcome.DUPLICATE.value)
MODULE_CHANGES = (PlanChange.NEW.value, PlanChange.REPLACED.value, PlanChange.UNCHANGED.value)


class SourceText(serializers.CharField):
    """Text only: a number or a list is not a file's source (CharField would stringify it)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class BundleIn(serializers.Serializer):
    """One extension: its entry file and every file it imports, by path."""

    entry = SourceText(max_length=255, trim_whitespace=False, help_text="e.g. processes/po.ts")
    files = serializers.DictField(
        child=SourceText(allow_blank=True, trim_whitespace=False),
        allow_empty=False,
        help_text="{path: source text}",
    )


class BundlePartFields(serializers.Serializer):
    """Adds one field per registered bundle part that describes itself (see the module docstring)."""

    part_role = ""  # "request_serializer" or "change_serializer"
    is_part_always_answered = False

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for key, part in sorted(bundle_parts().items()):
            described = getattr(part, self.part_role, None)
            if described is not None:
                fields[key] = described(many=True, required=self.is_part_always_answered)
        return fields


class BundleRequestIn(BundlePartFields):
    """``POST /v1/extensions/bundle/plan`` and ``…/apply``: a whole project at once.

    A part left out is not changed; a part sent is the whole truth (``"schedules": []`` removes
    every schedule).
    """

    part_role = "request_serializer"

    modules = BundleIn(many=True, required=False)
    removes = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Ids of deployed extensions to remove.",
    )


class ExtensionOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    version = serializers.IntegerField(help_text="The version served now.")
    status = serializers.ChoiceField(choices=ExtensionStatus.choices)
    deployedBy = serializers.CharField(allow_null=True)
    deployedAt = serializers.DateTimeField(allow_null=True)
    sha256 = serializers.CharField(allow_null=True)


class ExtensionListOut(serializers.Serializer):
    extensions = ExtensionOut(many=True)


class DeployedOut(serializers.Serializer):
    """What a deploy stored: ``written`` for a new id, ``duplicate`` when it replaced one."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    version = serializers.IntegerField()
    outcome = serializers.ChoiceField(choices=DEPLOY_OUTCOMES)
    status = serializers.ChoiceField(choices=ExtensionStatus.choices)


class RemovedOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    status = serializers.ChoiceField(choices=ExtensionStatus.choices)


class LintWarningOut(serializers.Serializer):
    rule = serializers.CharField()
    file = serializers.CharField()
    message = serializers.CharField()


class LintOut(serializers.Serializer):
    """What lint found; ``kind`` and ``id`` are null when the file defines no extension."""

    entry = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices, allow_null=True)
    id = serializers.CharField(allow_null=True)
    warnings = LintWarningOut(many=True)


class ModuleChangeOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    entry = serializers.CharField()
    sha256 = serializers.CharField()
    change = serializers.ChoiceField(choices=MODULE_CHANGES)
    deployedVersion = serializers.IntegerField(
        allow_null=True, help_text="The version served now, if any."
    )


class RemovePlanOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    alongside = serializers.ListField(
        child=serializers.CharField(), help_text='What goes with it, e.g. "schedules:nightly".'
    )


class UndeclaredOut(serializers.Serializer):
    """Deployed, neither declared nor removed by the bundle: left as it is."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    version = serializers.IntegerField()


class BundlePlanOut(BundlePartFields):
    """What applying the bundle would change; nothing is written."""

    part_role = "change_serializer"
    is_part_always_answered = True  # every part says what it would change, sent or not

    modules = ModuleChangeOut(many=True)
    removes = RemovePlanOut(many=True)
    undeclared = UndeclaredOut(many=True)


class ModuleAppliedOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ExtensionKind.choices)
    version = serializers.IntegerField()
    outcome = serializers.ChoiceField(choices=DeployOutcome.values)
    status = serializers.ChoiceField(choices=ExtensionStatus.choices)


class BundleAppliedOut(BundlePartFields):
    """What the apply did, in one transaction; a part is answered when the bundle sent it."""

    part_role = "change_serializer"

    modules = ModuleAppliedOut(many=True)
    removed = RemovedOut(many=True)
    undeclared = UndeclaredOut(many=True)

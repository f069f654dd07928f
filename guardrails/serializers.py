"""Shapes of ``/v1/settings``, for the OpenAPI schema (the view renders ``settings_list`` itself).

The PATCH body is written from the registry, so every key, its type and its bounds are in the
schema and cannot drift from what ``SettingSpec.parse`` accepts.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from guardrails.patterns import PATTERNS
from guardrails.registry import REGISTRY, SETTINGS, SettingGroup, SettingSpec, SettingType
from guardrails.setting_keys import SETTING_ALIASES

INTEGER_OR_BOOLEAN = {"oneOf": [{"type": "integer"}, {"type": "boolean"}]}


@extend_schema_field(INTEGER_OR_BOOLEAN)
class SettingValueField(serializers.Field):
    """A boolean setting's value is true or false; every other setting's is a whole number."""


class SettingOut(serializers.Serializer):
    """One instance setting: the value in force, its declaration and its last change."""

    key = serializers.CharField()
    value = SettingValueField()
    default = SettingValueField()
    type = serializers.ChoiceField(choices=[t.value for t in SettingType])
    min = serializers.IntegerField()
    max = serializers.IntegerField()
    group = serializers.ChoiceField(choices=[g.value for g in SettingGroup])
    description = serializers.CharField()
    changedAt = serializers.DateTimeField(allow_null=True)
    changedBy = serializers.CharField(allow_null=True)


class SettingsOut(serializers.Serializer):
    settings = SettingOut(many=True)


def _value_schema(spec: SettingSpec) -> dict[str, Any]:
    if spec.type is SettingType.BOOLEAN:
        schema: dict[str, Any] = {"type": "boolean"}
    else:
        schema = {"type": "integer", "minimum": spec.min, "maximum": spec.max}
    return {
        **schema,
        "nullable": True,
        "description": f"{spec.description} ({spec.type.value}, "
        f"default {spec.default}; null: the default)",
    }


def _pattern_schema() -> dict[str, Any]:
    """Any other key is a per-source setting (OpenAPI 3.0 has no ``patternProperties``)."""
    return {
        "type": "integer",
        "minimum": 1,
        "nullable": True,
        "description": "Per connected source: "
        + "; ".join(f"{spec.key} — {spec.description}" for spec in PATTERNS)
        + " (null: no limit). Any other key is refused.",
    }


# ``{key: value | null}``: only the keys to change; all are checked before any is applied.
SETTINGS_PATCH = {
    "type": "object",
    "minProperties": 1,
    "properties": {
        **{str(spec.key): _value_schema(spec) for spec in SETTINGS},
        # Old names, accepted for one release: each changes its new one.
        **{
            old: {
                **_value_schema(REGISTRY[new]),
                "deprecated": True,
                "description": f"The old name of {new}; it changes {new}.",
            }
            for old, new in SETTING_ALIASES.items()
        },
    },
    "additionalProperties": _pattern_schema(),
}

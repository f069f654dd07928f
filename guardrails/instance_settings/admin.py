"""Settings → Write guardrails: every instance setting, grouped, with its default, bounds and value.

The changelist is one form over the registry (``guardrails.registry``) rather than a list of rows,
because a setting left at its default has no row and an operator must still see (and change) it.

Nothing is ever reset silently:
- Inputs are text, not ``type=number``: a browser turns a typo such as ``5e`` in a number input
  into an empty value, which would drop the override; as text it reaches the registry's parser
  and is refused with the field's error.
- Only the fields the operator changed on the page are written: each field carries the value the
  page showed (Django's hidden initial), so a field left alone — even blank, even if someone else
  changed it meanwhile — writes nothing. A field the operator emptied goes back to its default.
- The save is all-or-nothing: every field is parsed first, and the writes share one transaction,
  so one bad value changes nothing at all.
Writes go through ``guardrails.settings`` (``setting_set`` / ``setting_clear``) with the operator as
``by``, which keeps each change in the audit trail.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from guardrails.instance_settings.models import WriteGuardrail
from guardrails.models import InstanceSetting
from guardrails.registry import (
    SettingGroup,
    SettingInvalid,
    SettingSpec,
    SettingType,
)
from guardrails.setting_keys import SETTING_ALIASES, setting_aliases_of
from guardrails.settings import setting_clear, setting_get, setting_set, settings_all

UNITS = {SettingType.MILLISECONDS: "ms", SettingType.BYTES: "bytes"}
BOOLEAN_CHOICES = [("", "default"), ("on", "on"), ("off", "off")]
BOOLEAN_TEXT = {"on": "true", "off": "false"}  # the select's two options, in the registry's words


def _field_name(key: str) -> str:
    return key.replace(".", "__")


def _shown(spec: SettingSpec, value: int | None) -> str:
    if value is None:
        return ""
    if spec.type is SettingType.BOOLEAN:
        return "on" if value else "off"
    return str(value)


class SettingField(forms.CharField):
    """One registry setting as text (a select for a boolean), parsed strictly by the registry itself
    (``SettingSpec.parse_text``: digits, no ``1_000`` or ``1,000``)."""

    def __init__(self, spec: SettingSpec, **kwargs: Any) -> None:
        self.spec = spec
        if spec.type is SettingType.BOOLEAN:
            widget: forms.Widget = forms.Select(choices=BOOLEAN_CHOICES)
        else:
            widget = forms.TextInput(
                attrs={"placeholder": "default", "inputmode": "numeric", "style": "width: 9em"}
            )
        super().__init__(
            label=spec.key,
            required=False,
            help_text=spec.description,
            widget=widget,
            show_hidden_initial=True,
            **kwargs,
        )

    def clean(self, value: str | None) -> int | None:
        text = super().clean(value)
        if not text:
            return None
        if self.spec.type is SettingType.BOOLEAN:
            text = BOOLEAN_TEXT.get(text, text)
        try:
            return self.spec.parse_text(text)
        except SettingInvalid as exc:
            raise forms.ValidationError(exc.message) from exc


def _old_names_renamed(data: Any) -> Any:
    """A POST that names a setting by its old name (and its hidden initial) changes the new one."""
    if data is None or not any(old in data for old in SETTING_ALIASES):
        return data
    data = data.copy()
    for old, new in SETTING_ALIASES.items():
        for prefix in ("", "initial-"):
            if prefix + old in data and prefix + _field_name(new) not in data:
                data[prefix + _field_name(new)] = data[prefix + old]
    return data


class InstanceSettingsForm(forms.Form):
    def __init__(
        self, data: Any = None, *args: Any, overrides: dict[str, int], **kwargs: Any
    ) -> None:
        super().__init__(_old_names_renamed(data), *args, **kwargs)
        # Per-source settings (sources.<name>.…) come after the fixed ones, one row per source.
        self.specs = settings_all()
        for spec in self.specs:
            self.fields[_field_name(spec.key)] = SettingField(
                spec, initial=_shown(spec, overrides.get(spec.key))
            )

    def changes(self) -> dict[str, int | None]:
        """``{key: new override or None (back to the default)}`` for the fields the operator changed."""
        changed = set(self.changed_data)
        return {
            spec.key: self.cleaned_data[_field_name(spec.key)]
            for spec in self.specs
            if _field_name(spec.key) in changed
        }


@admin.register(WriteGuardrail)
class WriteGuardrailAdmin(admin.ModelAdmin):
    change_list_template = "admin/instance_settings/write_guardrails.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # every key is already on the one form

    def has_delete_permission(
        self, request: HttpRequest, obj: WriteGuardrail | None = None
    ) -> bool:
        return False  # an emptied field is how a setting goes back to its default

    def changelist_view(
        self, request: HttpRequest, extra_context: dict | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        can_change = self.has_change_permission(request)
        if request.method == "POST" and not can_change:
            raise PermissionDenied
        overrides = dict(InstanceSetting.objects.values_list("key", "value"))
        form = InstanceSettingsForm(
            request.POST if request.method == "POST" else None, overrides=overrides
        )
        if request.method == "POST" and form.is_valid():
            try:
                changed = self._save(form.changes(), by=request.user)
            except SettingInvalid as exc:  # refused at write time: the transaction kept nothing
                form.add_error(None, exc.message)
            else:
                self.message_user(
                    request,
                    f"{len(changed)} setting(s) changed"
                    + (f": {', '.join(changed)}" if changed else ""),
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(request.get_full_path())
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Instance settings",
            "subtitle": None,
            "groups": self._groups(form, overrides),
            "form": form,
            "can_change": can_change,
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.change_list_template, context)

    @staticmethod
    def _groups(form: InstanceSettingsForm, overrides: dict[str, int]) -> list[dict[str, Any]]:
        groups = []
        for group in SettingGroup:
            rows = [
                {
                    "key": spec.key,
                    "aliases": setting_aliases_of(spec.key),
                    "spec": spec,
                    "unit": UNITS.get(spec.type, ""),
                    "default": _shown(spec, spec.default),
                    "in_force": _shown(spec, setting_get(spec.key)),
                    "is_overridden": spec.key in overrides,
                    "field": form[_field_name(spec.key)],
                    "bounds": "" if spec.type is SettingType.BOOLEAN else f"{spec.min}–{spec.max}",
                }
                for spec in form.specs
                if spec.group is group
            ]
            if rows:
                groups.append({"name": str(group), "rows": rows})
        return groups

    @staticmethod
    @transaction.atomic
    def _save(changes: dict[str, int | None], *, by: Any) -> list[str]:
        for key, value in changes.items():
            if value is None:
                setting_clear(key, by=by)
            else:
                setting_set(key, value, by=by)
        return list(changes)

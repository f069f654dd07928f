"""Settings → Write guardrails: every delete cap with its default and the value in force, editable.

The changelist is one form over the registry (``guardrails.registry``) rather than a list of rows,
because an unset cap has no row and an operator must still see (and raise) it. A blank override
drops the row, so the Django setting or the shipped default is in force again. The inputs are text,
not ``type=number``: a browser turns a typo such as ``5e`` in a number input into an empty value,
which would silently drop the override; as text it reaches the registry's parser and is refused.
"""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from guardrails.instance_settings.models import WriteGuardrail
from guardrails.models import InstanceSetting
from guardrails.registry import REGISTRY, SettingInvalid, SettingSpec
from guardrails.settings import setting_clear, setting_get, setting_set

PREFIX = "guardrails."


def write_guardrail_keys() -> list[str]:
    return [key for key in REGISTRY if key.startswith(PREFIX)]


def _field_name(key: str) -> str:
    return key.replace(".", "__")


class SettingField(forms.CharField):
    """One registry setting as text, parsed (type and bounds) by the registry itself."""

    def __init__(self, spec: SettingSpec, **kwargs) -> None:
        self.spec = spec
        super().__init__(label=spec.key, required=False, help_text=spec.description, **kwargs)

    def clean(self, value: str | None) -> int | None:
        text = super().clean(value)
        if not text:
            return None
        try:
            return self.spec.parse(text)
        except SettingInvalid as exc:
            raise forms.ValidationError(exc.message) from exc


class WriteGuardrailsForm(forms.Form):
    def __init__(self, *args, overrides: dict[str, int], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for key in write_guardrail_keys():
            self.fields[_field_name(key)] = SettingField(
                REGISTRY[key], initial=overrides.get(key),
                widget=forms.TextInput(attrs={"placeholder": str(setting_get(key)), "inputmode": "numeric",
                                              "style": "width: 9em"}),
            )

    def overrides(self) -> dict[str, int | None]:
        return {key: self.cleaned_data[_field_name(key)] for key in write_guardrail_keys()}


@admin.register(WriteGuardrail)
class WriteGuardrailAdmin(admin.ModelAdmin):
    change_list_template = "admin/instance_settings/write_guardrails.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # every key is already on the one form

    def has_delete_permission(self, request: HttpRequest, obj: WriteGuardrail | None = None) -> bool:
        return False  # a blank override is how a cap goes back to its default

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        can_change = self.has_change_permission(request)
        overrides = dict(
            InstanceSetting.objects.filter(key__in=write_guardrail_keys()).values_list("key", "value")
        )
        form = WriteGuardrailsForm(request.POST if request.method == "POST" else None, overrides=overrides)
        if request.method == "POST" and can_change and form.is_valid():
            changed = self._save(form.overrides(), overrides, by=request.user)
            self.message_user(request, f"{len(changed)} write guardrail(s) changed"
                              + (f": {', '.join(changed)}" if changed else ""), messages.SUCCESS)
            return HttpResponseRedirect(request.get_full_path())
        rows = [
            {"key": key, "default": REGISTRY[key].default, "spec": REGISTRY[key], "in_force": setting_get(key),
             "field": form[_field_name(key)], "is_overridden": key in overrides}
            for key in write_guardrail_keys()
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Write guardrails",
            "subtitle": None,
            "rows": rows,
            "form": form,
            "can_change": can_change,
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.change_list_template, context)

    @staticmethod
    def _save(wanted: dict[str, int | None], current: dict[str, int], *, by) -> list[str]:
        changed = []
        for key, value in wanted.items():
            if value is None and key in current:
                setting_clear(key, by=by)
            elif value is not None and current.get(key) != value:
                setting_set(key, value, by=by)
            else:
                continue
            changed.append(key)
        return changed

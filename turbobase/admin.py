"""The admin's own doors: django-q2's screens read-only, and the admin sign-in locked out too.

django-q2's screens (Scheduled tasks, Successful and Failed tasks, Queued tasks) are view-only.

django-q2 registers admin screens where an administrator can type any dotted path into a
Schedule's ``func`` — ``os.system`` included — and a worker runs it, or resubmit a stored task.
That is arbitrary host code for anyone with an admin login, so the screens are re-registered here
as view-only: no add, no change, no delete, no actions. Schedules are made by code (the system
schedules ``qcluster`` puts back, and ``ext deploy``'s process schedules), never typed in.

``django_q.admin`` is imported first so its registrations exist to replace, whichever app's admin
module autodiscovery reaches first.

The admin's sign-in form counts into the same per-username lockout as ``POST /v1/auth/session``
(``kernel.sign_in``), so the HTML door is no way round the API's.
"""

from __future__ import annotations

from typing import Any

import django_q.admin as q_admin
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django_q.models import Failure, OrmQ, Schedule, Success

from kernel.sign_in import (
    SignInLocked,
    client_address,
    sign_in_failure_record,
    sign_in_lock_check,
    sign_in_success_record,
)


class ReadOnly:
    """View-only: every field read-only, nothing added, changed, deleted or re-run."""

    actions = None

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ScheduleAdmin(ReadOnly, q_admin.ScheduleAdmin):
    pass


class SuccessAdmin(ReadOnly, q_admin.TaskAdmin):
    pass


class FailureAdmin(ReadOnly, q_admin.FailAdmin):
    pass


class QueuedAdmin(ReadOnly, q_admin.QueueAdmin):
    pass


# Only what django-q2 registered is replaced (it shows Queued tasks on the ORM broker only).
for model, model_admin in (
    (Schedule, ScheduleAdmin),
    (Success, SuccessAdmin),
    (Failure, FailureAdmin),
    (OrmQ, QueuedAdmin),
):
    if admin.site.is_registered(model):
        admin.site.unregister(model)
        admin.site.register(model, model_admin)


class LockoutAdminAuthenticationForm(AdminAuthenticationForm):
    """Django's admin sign-in, refused while locked from this client and counting its failures."""

    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username")
        if not username:
            return super().clean()  # the field's own error (missing, NUL) stands
        address = client_address(self.request) if self.request is not None else ""
        try:
            sign_in_lock_check(username=username, address=address)
        except SignInLocked as locked:
            raise ValidationError(locked.message, code="too_many_attempts") from None
        try:
            cleaned = super().clean()
        except ValidationError:
            if self.user_cache is None:  # a wrong password, not a non-staff account
                sign_in_failure_record(username=username, address=address)
            raise
        if self.user_cache is not None:  # signed in (a form without a password proves nothing)
            sign_in_success_record(username=username, address=address)
        return cleaned


admin.site.login_form = LockoutAdminAuthenticationForm

"""django-q2's admin screens are view-only: no function path typed in, no task re-run."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory
from django_q.models import Failure, OrmQ, Schedule, Success, Task

from kernel.models import SignInFailure
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

SCHEDULE_FORM = {
    "name": "evil",
    "func": "os.getcwd",
    "schedule_type": "O",
    "repeats": "-1",
    "next_run_0": "2026-01-01",
    "next_run_1": "00:00:00",
}


@pytest.fixture
def schedule() -> Schedule:
    return Schedule.objects.create(
        name="sweep", func="processes.tasks.sweep", schedule_type="I", minutes=1
    )


def test_no_schedule_can_be_added_from_the_admin(operator):
    before = Schedule.objects.count()
    assert operator.get("/admin/django_q/schedule/add/").status_code == 403
    assert operator.post("/admin/django_q/schedule/add/", SCHEDULE_FORM).status_code == 403
    assert Schedule.objects.count() == before
    assert not Schedule.objects.filter(func="os.getcwd").exists()


def test_a_schedule_is_shown_but_its_function_cannot_be_changed(operator, schedule):
    url = f"/admin/django_q/schedule/{schedule.pk}/change/"
    page = operator.get(url)
    assert page.status_code == 200
    assert b"processes.tasks.sweep" in page.content
    assert b'name="func"' not in page.content  # shown as text, not a field
    assert operator.post(url, {**SCHEDULE_FORM, "name": "sweep"}).status_code == 403
    schedule.refresh_from_db()
    assert schedule.func == "processes.tasks.sweep"


def test_a_schedule_cannot_be_deleted_from_the_admin(operator, schedule):
    url = f"/admin/django_q/schedule/{schedule.pk}/delete/"
    assert operator.post(url, {"post": "yes"}).status_code == 403
    assert Schedule.objects.filter(pk=schedule.pk).exists()


@pytest.mark.parametrize("model", [Schedule, Success, Failure, OrmQ])
def test_every_django_q_screen_is_view_only_with_no_actions(model):
    request = RequestFactory().get("/admin/")
    request.user = make_user("root", admin=True)
    model_admin = admin.site._registry[model]
    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert model_admin.get_actions(request) == {}


def test_a_failed_task_cannot_be_resubmitted(operator):
    failed = Task.objects.create(
        id="f" * 32,
        name="failed-one",
        func="os.getcwd",
        started="2026-01-01T00:00Z",
        stopped="2026-01-01T00:00Z",
        success=False,
    )
    res = operator.post(
        "/admin/django_q/failure/", {"action": "resubmit_task", "_selected_action": [failed.pk]}
    )
    assert res.status_code in (200, 302)
    assert OrmQ.objects.count() == 0
    assert Failure.objects.filter(pk=failed.pk).exists()


def admin_sign_in(client: Client, username: str, password: str):
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_the_admin_sign_in_shares_the_api_lockout(admin_user, settings):
    settings.TURBOBASE_SIGN_IN_MAX_FAILURES = 3
    client = Client()
    for _ in range(2):
        assert (
            admin_sign_in(client, "root", "wrong").status_code == 200
        )  # the form again, with an error
    # The third failure comes through the API: both doors count into one row.
    api = Client().post(
        "/v1/auth/session",
        {"username": "root", "password": "wrong"},
        content_type="application/json",
    )
    assert api.status_code == 401
    locked = admin_sign_in(client, "root", "pw-root")
    assert locked.status_code == 200
    assert b"too many failed sign-ins for this username" in locked.content
    assert "_auth_user_id" not in client.session
    assert SignInFailure.objects.get(username="root").failures == 3


def test_an_admin_sign_in_resets_the_count_and_a_missing_password_does_not(admin_user):
    client = Client()
    admin_sign_in(client, "root", "wrong")
    client.post("/admin/login/?next=/admin/", {"username": "root"})
    assert SignInFailure.objects.get(username="root").failures == 1
    assert admin_sign_in(client, "root", "pw-root").status_code == 302
    assert not SignInFailure.objects.filter(username="root").exists()

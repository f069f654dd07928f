"""The admin is the product's: its name, an operator's dashboard, "View site" home, Workers last."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.test.utils import override_settings
from django.utils import timezone

from guardrails.models import HeldDelete
from processes.models import ProcessRun
from records.boundary import record_create, record_delete
from records.trail import Actor
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _run(state: str, *, finished_ago: timedelta | None = None) -> ProcessRun:
    now = timezone.now()
    return ProcessRun.objects.create(
        process_id="acme:p",
        state=state,
        mode="async",
        module_version=1,
        finished_at=now - finished_ago if finished_ago is not None else None,
    )


def _held(user) -> HeldDelete:
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": "A"}
    ).record
    record_delete(actor=Actor(user=user), record_type="customer", pg_row_id=record.pk)
    return HeldDelete.objects.get(pg_row_id=record.pk)


def test_header_and_title_name_the_product_and_view_site_goes_home(operator):
    page = operator.get("/admin/").content.decode()
    assert "<title>Operations | Turbobase</title>" in page
    assert '<div id="site-name"><a href="/admin/">Turbobase</a></div>' in page
    assert "Django administration" not in page and "Django site admin" not in page
    assert '<a href="/">View site</a>' in page
    assert operator.get("/").status_code == 200


@override_settings(TURBOBASE_INSTANCE_NAME="Acme production")
def test_an_instance_name_is_shown_beside_the_product(operator):
    page = operator.get("/admin/").content.decode()
    assert "<title>Operations | Turbobase · Acme production</title>" in page


def test_the_dashboard_counts_what_needs_an_operator_each_a_link_to_its_list(operator, alice):
    _held(alice), _held(alice)
    recent = _run("failed", finished_ago=timedelta(hours=2))
    _run("failed", finished_ago=timedelta(hours=30))  # failed, but not in the last 24 h
    _run("queued"), _run("queued"), _run("committed", finished_ago=timedelta(minutes=5))
    res = operator.get("/admin/")
    tiles = {t.label: (t.count, t.url) for t in res.context["dashboard"]}
    assert [label for label in tiles] == [
        "open tasks",
        "held deletes pending",
        "runs failed in the last 24 h",
        "runs queued",
        "runs running",
        "runs committed",
        "runs failed",
        "runs rolled back",
        "runs cancelled",
        "runs refused",
    ]
    assert {label: count for label, (count, _) in tiles.items()} == {
        "open tasks": 0,
        "held deletes pending": 2,
        "runs failed in the last 24 h": 1,
        "runs queued": 2,
        "runs running": 0,
        "runs committed": 1,
        "runs failed": 2,
        "runs rolled back": 0,
        "runs cancelled": 0,
        "runs refused": 0,
    }
    assert tiles["held deletes pending"][1] == "/admin/guardrails/guardrail/?status__exact=pending"
    # Every link opens its list filtered to exactly what the tile counted.
    listed = operator.get(tiles["held deletes pending"][1])
    assert listed.status_code == 200 and listed.context["cl"].result_count == 2
    failed = operator.get(tiles["runs failed in the last 24 h"][1])
    assert failed.status_code == 200
    assert [r.pk for r in failed.context["cl"].result_list] == [recent.pk]
    queued = operator.get(tiles["runs queued"][1])
    assert queued.context["cl"].result_count == 2


def test_staff_without_view_rights_see_only_their_own_open_tasks(db):
    clerk = make_user("clerk")
    clerk.is_staff = True
    clerk.save()
    client = Client()
    client.force_login(clerk)
    res = client.get("/admin/")
    assert res.status_code == 200
    assert [(t.label, t.count, t.url) for t in res.context["dashboard"]] == [
        ("open tasks", 0, "/admin/processes/humantask/inbox/")
    ]
    assert client.get("/admin/processes/humantask/inbox/").status_code == 200


def test_django_q2_screens_are_one_workers_section_at_the_end(operator):
    app_list = operator.get("/admin/").context["app_list"]
    assert app_list[-1]["name"] == "Workers"
    assert [app["app_label"] for app in app_list].count("django_q") == 1
    assert all(
        not model["perms"].get("add") and not model["perms"].get("change")
        for model in app_list[-1]["models"]
    )

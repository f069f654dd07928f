"""Scopes on every /v1 route: each route × {read-only, write-only, deploy-only token, session}.

The rule table below is written out by hand from issue 9 and seed 000 (not read from the views'
declarations), so a view that declares the wrong scope fails here; the coverage test walks the URL
resolver, so a new route without a row fails too.
"""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import call_command
from django.test import override_settings
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from extensions.models import ExtensionModule, ExtensionVersion
from guardrails.models import HeldDelete, HeldStatus, InstanceSetting
from kernel.models import token_issue
from kernel.permissions import DECLARED_METHODS
from kernel.scope_declarations import (
    api_routes,
    scope_declarations_check,
    view_scope_problems,
)
from processes.models import ProcessRun
from records.boundary import record_create, record_delete
from records.models import Record, WriteTrail
from records.trail import Actor
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

READ, WRITE, DEPLOY = "data:read", "data:write", "extensions:deploy"
RUN = "00000000-0000-0000-0000-000000000001"
BUNDLE = {"entry": "a.ts", "files": {"a.ts": "export default 1"}}

# (method, route pattern as the resolver spells it, a concrete path, body, the scope it needs)
RULES = [
    ("get", "v1/^rest/(?P<resource>.*)$", "/v1/rest/legacy_customer", None, READ),
    ("post", "v1/batch", "/v1/batch", {"reads": [{"path": "legacy_customer"}]}, READ),
    (
        "post",
        "v1/data/<str:record_type>",
        "/v1/data/legacy_customer",
        {"parent": {"company_name": "A"}},
        WRITE,
    ),
    (
        "patch",
        "v1/data/<str:record_type>",
        "/v1/data/legacy_customer",
        {"pgRowId": RUN, "parent": {"company_name": "B"}},
        WRITE,
    ),
    ("delete", "v1/data/<str:record_type>", "/v1/data/legacy_customer", {"pgRowId": RUN}, WRITE),
    (
        "post",
        "v1/data/<str:record_type>/settle",
        "/v1/data/legacy_customer/settle",
        {"pgRowId": RUN},
        WRITE,
    ),
    ("get", "v1/audit", "/v1/audit", None, READ),
    ("get", "v1/guardrails/held-deletes", "/v1/guardrails/held-deletes", None, READ),
    (
        "post",
        "v1/guardrails/held-deletes/<int:held_id>/approve",
        "/v1/guardrails/held-deletes/{held}/approve",
        {},
        DEPLOY,
    ),
    (
        "post",
        "v1/guardrails/held-deletes/<int:held_id>/reject",
        "/v1/guardrails/held-deletes/{held}/reject",
        {},
        DEPLOY,
    ),
    # The list is read by `ext plan` with its deploy token, and by a data:read token.
    ("get", "v1/extensions", "/v1/extensions", None, (READ, DEPLOY)),
    ("post", "v1/extensions", "/v1/extensions", BUNDLE, DEPLOY),
    ("post", "v1/extensions/lint", "/v1/extensions/lint", BUNDLE, DEPLOY),
    ("post", "v1/extensions/bundle/plan", "/v1/extensions/bundle/plan", {"modules": []}, DEPLOY),
    ("post", "v1/extensions/bundle/apply", "/v1/extensions/bundle/apply", {"modules": []}, DEPLOY),
    ("delete", "v1/extensions/<str:module_id>", "/v1/extensions/acme:nothing", None, DEPLOY),
    ("get", "v1/settings", "/v1/settings", None, (READ, DEPLOY)),
    ("patch", "v1/settings", "/v1/settings", {"processes.slice_cap": 999}, DEPLOY),
    ("get", "v1/sources", "/v1/sources", None, (READ, DEPLOY)),
    ("post", "v1/history/purge", "/v1/history/purge", {"dryRun": True}, DEPLOY),
    ("get", "v1/processes", "/v1/processes", None, READ),
    ("get", "v1/processes/queue", "/v1/processes/queue", None, READ),
    ("get", "v1/processes/types", "/v1/processes/types", None, READ),
    ("get", "v1/processes/runs/<str:run_id>", f"/v1/processes/runs/{RUN}", None, READ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/cancel",
        f"/v1/processes/runs/{RUN}/cancel",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/rollback",
        f"/v1/processes/runs/{RUN}/rollback",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/resume",
        f"/v1/processes/runs/{RUN}/resume",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/retry",
        f"/v1/processes/runs/{RUN}/retry",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/redrive",
        f"/v1/processes/runs/{RUN}/redrive",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/<str:run_id>/redirect",
        f"/v1/processes/runs/{RUN}/redirect",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/<str:process_id>/cancel",
        "/v1/processes/acme:nothing/cancel",
        None,
        DEPLOY,
    ),
    ("post", "v1/processes/<str:process_id>", "/v1/processes/acme:nothing", {}, DEPLOY),
    ("get", "v1/processes/<str:process_id>/runs", "/v1/processes/acme:nothing/runs", None, READ),
    ("post", "v1/processes/<str:process_id>/plan", "/v1/processes/acme:nothing/plan", {}, DEPLOY),
    ("get", "v1/processes/runs", "/v1/processes/runs", None, READ),
    (
        "post",
        "v1/processes/runs/bulk",
        "/v1/processes/runs/bulk",
        {"action": "cancel", "filter": {}, "preview": True},
        DEPLOY,
    ),
    ("get", "v1/processes/runs/bulk/<str:bulk_id>", f"/v1/processes/runs/bulk/{RUN}", None, READ),
    (
        "post",
        "v1/processes/runs/bulk/<str:bulk_id>/approve",
        f"/v1/processes/runs/bulk/{RUN}/approve",
        None,
        DEPLOY,
    ),
    (
        "post",
        "v1/processes/runs/bulk/<str:bulk_id>/reject",
        f"/v1/processes/runs/bulk/{RUN}/reject",
        {"reason": "x"},
        DEPLOY,
    ),
    (
        "get",
        "v1/data/<str:record_type>/<str:pg_row_id>/lineage",
        f"/v1/data/customer/{RUN}/lineage",
        None,
        READ,
    ),
    ("post", "v1/events", "/v1/events", {"name": "order.paid"}, WRITE),
    ("get", "v1/tasks", "/v1/tasks", None, READ),
    ("post", "v1/tasks/<str:task_id>/complete", f"/v1/tasks/{RUN}/complete", {"output": 1}, WRITE),
    ("post", "v1/tasks/<str:task_id>/reject", f"/v1/tasks/{RUN}/reject", {"reason": "no"}, WRITE),
]
# Open on purpose, each with its reason in the view's ``scope_exempt``.
EXEMPT = {"v1/auth/session", "v1/health", "v1/health/live", "v1/health/ready"}
PRINCIPALS = {
    "read-only token": [READ],
    "write-only token": [WRITE],
    "deploy-only token": [DEPLOY],
    "session": None,
}


def _snapshot() -> tuple:
    return (
        sorted(InstanceSetting.objects.values_list("key", "value")),
        Record.reads.count(),
        WriteTrail.reads.count(),
        ProcessRun.objects.count(),
        ExtensionModule.objects.count(),
        ExtensionVersion.objects.count(),
        sorted(HeldDelete.objects.values_list("status", flat=True)),
    )


def _client(owner, scopes: list[str] | None) -> APIClient:
    client = APIClient()
    if scopes is None:
        client.force_login(owner)  # a real session cookie, not force_authenticate
    else:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(user=owner, scopes=scopes)[1]}")
    return client


def _held_delete(user) -> HeldDelete:
    record = record_create(
        actor=Actor(user=user), record_type="customer", parent={"company_name": "H"}
    )
    assert (
        record_delete(
            actor=Actor(user=user), record_type="customer", pg_row_id=record.record.pk
        ).outcome
        == "held"
    )
    return HeldDelete.objects.get()


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize(
    "method, route, path, body, needed", RULES, ids=[f"{r[0].upper()} {r[2]}" for r in RULES]
)
def test_route_by_principal(method, route, path, body, needed, principal):
    owner = make_user("ops", admin=True)  # an administrator: only the scope can refuse
    held = _held_delete(owner)
    client = _client(owner, PRINCIPALS[principal])
    before = _snapshot()
    res = getattr(client, method)(path.format(held=held.pk), body, format="json")
    assert res.status_code < 500, res.content
    scopes = PRINCIPALS[principal]
    alternatives = (needed,) if isinstance(needed, str) else needed
    if scopes is None or set(alternatives) & set(scopes):
        assert not (res.status_code == 403 and res.json().get("error") == "insufficient_scope"), (
            res.content
        )
    else:
        assert res.status_code == 403, res.content
        assert res.json() == {
            "error": "insufficient_scope",
            "scope": alternatives[0],
            "message": f"this access token lacks the {' or '.join(alternatives)} scope",
        }
        assert _snapshot() == before


def test_the_table_covers_every_route_and_handler():
    covered = {(method, route) for method, route, *_ in RULES}
    walked = set()
    for route, cls, _ in api_routes():
        if route in EXEMPT:
            assert getattr(cls, "scope_exempt", ""), route
            continue
        walked |= {(m, route) for m in DECLARED_METHODS if hasattr(cls, m)}
    assert walked == covered


def test_every_route_declares_its_scopes_and_the_system_check_passes():
    assert [
        (route, view_scope_problems(cls))
        for route, cls, _ in api_routes()
        if view_scope_problems(cls)
    ] == []
    assert scope_declarations_check() == []
    call_command("check", "--fail-level", "ERROR")


def test_a_read_only_administrator_token_cannot_approve_a_held_delete():
    owner = make_user("ops", admin=True)
    held = _held_delete(owner)
    url = f"/v1/guardrails/held-deletes/{held.pk}/approve"
    res = _client(owner, [READ, WRITE]).post(url, {}, format="json")
    assert res.status_code == 403
    assert res.json()["scope"] == DEPLOY
    held.refresh_from_db()
    assert (held.status, held.decided_by_id) == (HeldStatus.PENDING, None)
    assert _client(owner, [DEPLOY]).post(url, {}, format="json").status_code == 200
    held.refresh_from_db()
    assert (held.status, held.decided_by_id) == (HeldStatus.APPROVED, owner.pk)


def test_a_read_only_token_cannot_create_edit_or_delete(alice):
    record = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"company_name": "Kept"}
    ).record
    client = _client(alice, [READ])
    for method, body in (
        ("post", {"parent": {"company_name": "New"}}),
        ("patch", {"pgRowId": str(record.pk), "parent": {"company_name": "X"}}),
        ("delete", {"pgRowId": str(record.pk)}),
    ):
        res = getattr(client, method)("/v1/data/legacy_customer", body, format="json")
        assert (res.status_code, res.json()["scope"]) == (403, WRITE)
    state = (record.fields, record.sync_state, record.sync_version)
    record.refresh_from_db()
    assert Record.reads.count() == 1
    assert (record.fields, record.sync_state, record.sync_version) == state
    assert client.get("/v1/rest/legacy_customer").json()[0]["company_name"] == "Kept"


def test_a_non_administrators_deploy_token_is_still_admin_required(alice):
    res = _client(alice, [DEPLOY]).post("/v1/processes/acme:nothing", {}, format="json")
    assert res.status_code == 403
    assert res.json()["error"] == "admin_required"


def test_head_needs_the_get_scope_and_options_needs_none(admin_user):
    assert _client(admin_user, [WRITE]).head("/v1/processes").status_code == 403
    assert _client(admin_user, [READ]).head("/v1/processes").status_code == 200
    assert _client(admin_user, [WRITE]).options("/v1/processes").status_code == 200


class _Undeclared(APIView):
    required_scopes = {"get": READ}

    def get(self, request):
        return Response({})

    def post(self, request):  # forgot its scope
        return Response({})


def test_an_undeclared_handler_is_refused_to_everyone_and_named_by_the_check(admin_user):
    assert view_scope_problems(_Undeclared) == [
        "_Undeclared.post() declares no scope in required_scopes"
    ]
    request = APIRequestFactory().post("/x", {}, format="json")
    request.user = admin_user
    res = _Undeclared.as_view()(request)
    assert res.status_code == 403
    assert res.data["error"] == "scope_undeclared"


def test_a_typo_or_unknown_scope_is_named_by_the_check():
    class Typo(APIView):
        required_scopes = {"gett": READ, "post": "data:everything"}

        def post(self, request):
            return Response({})

    assert view_scope_problems(Typo) == [
        "Typo.required_scopes['gett']: no such handler",
        "Typo.required_scopes['post']: unknown scope 'data:everything'",
    ]


def test_a_view_that_replaces_the_permission_classes_must_say_why():
    from rest_framework.permissions import IsAuthenticated

    class Quiet(APIView):
        permission_classes = [IsAuthenticated]

        def get(self, request):
            return Response({})

    assert view_scope_problems(Quiet) == [
        "Quiet: permission_classes leave out ScopedAccess and it sets no scope_exempt"
    ]


urlpatterns: list = []


@override_settings(ROOT_URLCONF=__name__)
def test_the_system_check_fails_on_an_undeclared_route():
    from django.urls import path

    urlpatterns[:] = [path("v1/undeclared", _Undeclared.as_view())]
    try:
        errors = scope_declarations_check()
    finally:
        urlpatterns.clear()
    assert [(e.id, e.msg, e.level) for e in errors] == [
        ("kernel.E001", "_Undeclared.post() declares no scope in required_scopes", checks.ERROR)
    ]

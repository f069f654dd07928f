"""The audit trail read back: ``GET /v1/audit`` (administrators) and the read-only admin list."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from guardrails.settings import setting_clear, setting_set
from kernel.audit import AuditEvent, audit_record
from kernel.models import token_issue

pytestmark = pytest.mark.django_db

AUDIT = "/v1/audit"


def token_client(user, scopes: list[str]) -> APIClient:
    _, raw = token_issue(user=user, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.fixture
def trail(admin_user, alice):
    setting_set("guardrails.max_deletes_per_min", 50, by=admin_user)
    setting_clear("guardrails.max_deletes_per_min", by=admin_user)
    audit_record(
        actor=alice, action="process.switched_off", target="process:acme:sync", reason="clean-up"
    )
    return list(AuditEvent.objects.order_by("id"))


def test_an_administrator_reads_every_event_newest_first(admin_api, trail):
    res = admin_api.get(AUDIT)
    assert res.status_code == 200
    changed, cleared, switched = trail
    assert res.json() == {
        "events": [
            {
                "id": switched.pk,
                "at": switched.at.isoformat(),
                "actor": "alice",
                "action": "process.switched_off",
                "target": "process:acme:sync",
                "before": None,
                "after": None,
                "reason": "clean-up",
            },
            {
                "id": cleared.pk,
                "at": cleared.at.isoformat(),
                "actor": "root",
                "action": "setting.changed",
                "target": "guardrails.max_deletes_per_min",
                "before": 50,
                "after": None,
                "reason": "",
            },
            {
                "id": changed.pk,
                "at": changed.at.isoformat(),
                "actor": "root",
                "action": "setting.changed",
                "target": "guardrails.max_deletes_per_min",
                "before": None,
                "after": 50,
                "reason": "",
            },
        ]
    }


def test_filters_by_actor_action_target_and_time(admin_api, trail):
    changed, cleared, switched = trail
    ids = lambda **q: [e["id"] for e in admin_api.get(AUDIT, q).json()["events"]]  # noqa: E731
    assert ids(actor="alice") == [switched.pk]
    assert ids(action="setting.changed") == [cleared.pk, changed.pk]
    assert ids(target="process:acme:sync") == [switched.pk]
    AuditEvent.objects.filter(pk=changed.pk).update(at=timezone.now() - timedelta(days=2))
    yesterday = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(after=yesterday) == [switched.pk, cleared.pk]
    assert ids(before=yesterday) == [changed.pk]
    assert ids(limit="1") == [switched.pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"after": "yesterday"}, "after"),
        ({"who": "root"}, "who"),
    ],
)
def test_a_bad_filter_is_refused_by_name(admin_api, trail, query, field):
    res = admin_api.get(AUDIT, query)
    assert res.status_code == 400
    body = res.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "invalid_request",
        "INVALID_FILTER",
        field,
    )


def test_limit_defaults_to_100_and_goes_up_to_1000(admin_api, admin_user):
    AuditEvent.objects.bulk_create(
        [AuditEvent(action="test.event", target=str(n)) for n in range(1001)]
    )
    assert len(admin_api.get(AUDIT).json()["events"]) == 100
    assert len(admin_api.get(AUDIT, {"limit": "1000"}).json()["events"]) == 1000


def test_only_administrators_read_it(alice_api, alice, admin_user, trail):
    res = alice_api.get(AUDIT)
    assert res.status_code == 403
    assert res.json()["error"] == "admin_required"
    assert APIClient().get(AUDIT).status_code == 401
    assert token_client(admin_user, ["data:read"]).get(AUDIT).status_code == 200
    refused = token_client(admin_user, ["data:write"]).get(AUDIT)
    assert (refused.status_code, refused.json()["error"]) == (403, "insufficient_scope")


def test_the_admin_lists_events_read_only_with_filters(operator, trail):
    changed = trail[0]
    res = operator.get("/admin/kernel/auditevent/")
    assert res.status_code == 200
    page = res.content.decode()
    assert "process:acme:sync" in page and "guardrails.max_deletes_per_min" in page
    assert "?action=setting.changed" in page  # the action filter
    filtered = operator.get("/admin/kernel/auditevent/", {"action": "process.switched_off"})
    assert "guardrails.max_deletes_per_min" not in filtered.content.decode()
    detail = operator.get(f"/admin/kernel/auditevent/{changed.pk}/change/")
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    assert operator.post(f"/admin/kernel/auditevent/{changed.pk}/delete/").status_code == 403
    assert operator.get("/admin/kernel/auditevent/add/").status_code == 403
    assert AuditEvent.objects.count() == 3


def test_staff_without_rights_cannot_see_the_admin_list(alice, trail):
    alice.is_staff = True
    alice.save()
    client = Client()
    client.force_login(alice)
    assert client.get("/admin/kernel/auditevent/").status_code == 403

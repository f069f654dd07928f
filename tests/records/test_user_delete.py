"""Deleting a user who wrote records: from the admin and from the ORM, the trail and records stay.

The trail keeps the actor's id and username for good (plain columns, no foreign key a deletion
could rewrite); the records the user owned stay, without an owner, released by a door service
and audited; the runs the user invoked keep their ledger.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from kernel.audit import AuditEvent
from processes.models import ProcessRun
from records.boundary import record_create, record_update
from records.catalog import record_type_get
from records.models import Record, WriteTrail
from records.policies import records_visible
from records.trail import Actor
from tests.conftest import make_user
from tests.processes.ledger_support import run_with_ledger

pytestmark = pytest.mark.django_db

TRAIL = ("action", "record_type", "outcome", "actor_id", "actor_name")


@pytest.fixture
def leaver() -> User:
    return make_user("leaver", groups=("sales",))


@pytest.fixture
def leavers_work(leaver) -> dict:
    actor = Actor(user=leaver)
    owned = record_create(actor=actor, record_type="legacy_customer", parent={"name": "a"}).record
    grouped = record_create(actor=actor, record_type="salesOrder", parent={"memo": "b"})
    record_update(
        actor=actor, record_type="salesOrder", pg_row_id=grouped.record.pk, parent={"memo": "m"}
    )
    run = run_with_ledger("acme:p", 2, user=leaver)
    return {"owned": owned.pk, "grouped": grouped.record.pk, "run": run.pk, "id": leaver.pk}


def _trail() -> list[tuple]:
    return list(WriteTrail.reads.order_by("id").values_list(*TRAIL))


def _after_the_deletion(work: dict, trail_before: list[tuple], by: str) -> None:
    assert not User.objects.filter(username="leaver").exists()
    # The trail is untouched: every row still names who did it, by id and by name.
    assert [row for row in _trail() if row[3] == work["id"]] == trail_before
    assert {(row[3], row[4]) for row in trail_before} == {(work["id"], "leaver")}
    # The records stay, ownerless; their data and group are as they were.
    owned, grouped = Record.reads.get(pk=work["owned"]), Record.reads.get(pk=work["grouped"])
    assert (owned.owner_id, owned.fields) == (None, {"name": "a"})
    assert (grouped.owner_id, grouped.group.name, grouped.fields["memo"]) == (None, "sales", "m")
    assert (owned.sync_version, grouped.sync_version) == (1, 2)
    # The run keeps its ledger, invoked by nobody now.
    run = ProcessRun.objects.get(pk=work["run"])
    assert (run.invoked_by_id, run.ledger.count()) == (None, 2)
    # One audit event says who deleted whom and which records were released.
    event = AuditEvent.objects.get(action="user.deleted")
    assert (event.actor_name, event.target) == (by, f"user:{work['id']}")
    assert event.before == {"username": "leaver", "recordsOwned": 2}
    assert event.after == {"recordsOwner": None}


def test_an_administrator_deletes_a_user_who_wrote_records_from_the_admin(
    operator: Client, leaver, leavers_work
):
    trail_before = _trail()
    url = f"/admin/auth/user/{leaver.pk}/delete/"
    page = operator.get(url)
    assert page.status_code == 200
    res = operator.post(url, {"post": "yes"})
    assert res.status_code == 302, res.content[:500]
    _after_the_deletion(leavers_work, trail_before, by="root")


def test_the_admin_bulk_delete_action_deletes_them_too(operator: Client, leaver, leavers_work):
    other = make_user("other")
    record_create(actor=Actor(user=other), record_type="legacy_customer", parent={"name": "o"})
    trail_before = [row for row in _trail() if row[4] == "leaver"]
    res = operator.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [leaver.pk], "post": "yes"},
    )
    assert res.status_code == 302, res.content[:500]
    _after_the_deletion(leavers_work, trail_before, by="root")
    # Nobody else's records were touched.
    assert Record.reads.filter(owner=other).count() == 1


def test_deleting_the_user_in_a_shell_works_and_is_audited_without_an_actor(leaver, leavers_work):
    trail_before = _trail()
    User.objects.get(username="leaver").delete()
    _after_the_deletion(leavers_work, trail_before, by="")


def test_after_the_deletion_owner_only_records_are_the_administrators_and_group_ones_the_groups(
    leaver, leavers_work, admin_user
):
    colleague, stranger = make_user("colleague", groups=("sales",)), make_user("stranger")
    leaver.delete()
    legacy, orders = record_type_get("legacy_customer"), record_type_get("salesOrder")
    assert records_visible(user=admin_user, record_type=legacy).count() == 1
    assert records_visible(user=stranger, record_type=legacy).count() == 0
    assert records_visible(user=colleague, record_type=legacy).count() == 0
    assert records_visible(user=colleague, record_type=orders).count() == 1
    assert records_visible(user=stranger, record_type=orders).count() == 0
    # A new account never inherits them: ids are not reused, and the owner is empty anyway.
    newcomer = make_user("leaver")
    assert newcomer.pk != leavers_work["id"]
    assert records_visible(user=newcomer, record_type=legacy).count() == 0


def test_a_trail_row_keeps_the_name_the_actor_had_when_it_was_written(leaver, leavers_work):
    leaver.username = "renamed"
    leaver.save()
    assert {row[4] for row in _trail()} == {"leaver"}


def test_the_trail_screen_still_names_a_deleted_actor(operator: Client, leaver, leavers_work):
    leaver.delete()
    page = operator.get("/admin/records/writetrail/?q=leaver")
    assert page.status_code == 200
    assert page.content.count(b'<td class="field-actor_name">leaver</td>') == 3


def test_deleting_a_group_from_the_admin_releases_its_records_and_is_audited(
    operator: Client, leaver, leavers_work
):
    sales = Group.objects.get(name="sales")
    res = operator.post(f"/admin/auth/group/{sales.pk}/delete/", {"post": "yes"})
    assert res.status_code == 302, res.content[:500]
    filed = Record.reads.filter(pk__in=[leavers_work["grouped"], leavers_work["owned"]])
    assert {(r.group_id, r.owner_id) for r in filed} == {(None, leaver.pk)}
    event = AuditEvent.objects.get(action="group.deleted")
    assert (event.actor_name, event.target) == ("root", f"group:{sales.pk}")
    assert (event.before, event.after) == (
        {"name": "sales", "recordsFiled": 2},
        {"recordsGroup": None},
    )
    assert records_visible(user=leaver, record_type=record_type_get("salesOrder")).count() == 1

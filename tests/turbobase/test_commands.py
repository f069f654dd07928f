"""tb_user, tb_token and tb_demo: what operators and make run call."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from kernel.models import AccessToken, token_hash
from records.models import Record, RecordWriteState

pytestmark = pytest.mark.django_db
User = get_user_model()


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_tb_user_creates_a_plain_user():
    out, _ = run("tb_user", "carol", "--password", "s3cret")
    assert out == "created user carol\n"
    carol = User.objects.get(username="carol")
    assert carol.check_password("s3cret")
    assert (carol.is_staff, carol.is_superuser, carol.is_active) == (False, False, True)


def test_tb_user_updates_password_and_role():
    run("tb_user", "carol", "--password", "one")
    out, _ = run("tb_user", "carol", "--password", "two", "--admin")
    assert out == "updated administrator carol\n"
    carol = User.objects.get(username="carol")
    assert carol.check_password("two") and not carol.check_password("one")
    assert (carol.is_staff, carol.is_superuser) == (True, True)
    run("tb_user", "carol", "--password", "two")
    carol.refresh_from_db()
    assert (carol.is_staff, carol.is_superuser) == (False, False)
    assert User.objects.filter(username="carol").count() == 1


def test_tb_user_refuses_an_empty_password():
    with pytest.raises(CommandError, match="--password must not be empty"):
        run("tb_user", "carol", "--password", "")
    assert not User.objects.filter(username="carol").exists()


def test_tb_token_prints_the_token_once_and_stores_its_hash():
    run("tb_user", "ops", "--password", "pw", "--admin")
    out, err = run("tb_token", "ops", "--scope", "extensions:deploy", "--scope", "data:read")
    raw = out.strip()
    assert raw.startswith("tbp_") and "\n" not in raw
    assert "shown only now" in err
    token = AccessToken.objects.get()
    assert (token.user.username, token.scopes) == ("ops", ["extensions:deploy", "data:read"])
    assert token.token_hash == token_hash(raw)
    res = APIClient().get("/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert res.status_code == 200
    assert res.json()["username"] == "ops"


def test_tb_token_unknown_user_is_a_clear_error():
    with pytest.raises(CommandError) as refused:
        run("tb_token", "nobody", "--scope", "extensions:deploy")
    assert (
        str(refused.value)
        == "no user named 'nobody'; create one with: manage.py tb_user nobody --password …"
    )
    assert AccessToken.objects.count() == 0


def test_tb_token_unknown_scope_is_a_clear_error():
    run("tb_user", "ops", "--password", "pw")
    with pytest.raises(CommandError) as refused:
        run("tb_token", "ops", "--scope", "everything")
    assert str(refused.value) == (
        "unknown scope(s): everything; known: extensions:deploy, data:read, data:write, metrics:read"
    )
    assert AccessToken.objects.count() == 0


def test_tb_token_needs_a_scope():
    run("tb_user", "ops", "--password", "pw")
    with pytest.raises(CommandError, match="name at least one --scope"):
        run("tb_token", "ops")
    assert AccessToken.objects.count() == 0


def test_tb_demo_loads_logins_and_records_once():
    out, _ = run("tb_demo")
    assert "demo administrator created: admin / admin" in out
    assert "demo user created: demo / demo" in out
    assert "demo records created: 5" in out
    admin, demo = User.objects.get(username="admin"), User.objects.get(username="demo")
    assert admin.is_staff and admin.check_password("admin")
    assert not demo.is_staff and demo.check_password("demo")
    # The demo records, beside the migration batch the processes room's demo adds (batch 2026-10).
    batch = Record.reads.filter(record_type="migration_item", fields__batch="2026-10")
    assert batch.count() == 200
    assert Record.reads.filter(owner=demo).exclude(pk__in=batch).count() == 5
    states = dict(Record.reads.values_list("record_type", "sync_state").order_by("record_type"))
    assert states == {
        "customer": "pending",
        "legacy_customer": "local",
        "migration_item": "local",
        "purchaseOrder": "pending",
    }
    assert RecordWriteState.reads.filter(operation="create", status="pending").count() == 2

    again, _ = run("tb_demo")
    assert again == "demo data ready\n"
    assert Record.reads.count() == 205
    assert User.objects.filter(username__in=["admin", "demo"]).count() == 2


def test_tb_demo_leaves_an_existing_login_alone():
    run("tb_user", "admin", "--password", "changed", "--admin")
    out, _ = run("tb_demo", "--no-records")
    assert "admin / admin" not in out
    assert User.objects.get(username="admin").check_password("changed")
    assert Record.reads.count() == 0

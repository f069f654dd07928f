"""The ``turbobase`` CLI against a real running server (pytest-django's live_server)."""

from __future__ import annotations

import json

import pytest

from kernel.models import token_issue
from records.boundary import record_create
from records.door import door_open
from records.models import Record, RecordWriteState, SyncState, WriteStatus
from records.trail import Actor
from tests.conftest import cli, make_user


@pytest.fixture
def instance(live_server, monkeypatch):
    """A live instance, an administrator's token, and the CLI's environment pointing at both."""
    owner = make_user("ops", admin=True)
    _, raw = token_issue(user=owner, scopes=["extensions:deploy"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url + "/")
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    return owner


def test_health_needs_no_token(instance, live_server, monkeypatch, capsys):
    monkeypatch.delenv("TURBOBASE_TOKEN")
    code, out, err = cli(capsys, "health")
    assert (code, err) == (0, "")
    assert out.startswith(f"ok — {live_server.url} (")


def test_whoami_names_the_token_owner(instance, live_server, capsys):
    code, out, _ = cli(capsys, "whoami")
    assert code == 0
    assert out == f"ops (administrator) at {live_server.url}; scopes: extensions:deploy\n"


def test_whoami_json(instance, capsys):
    code, out, _ = cli(capsys, "--json", "whoami")
    assert code == 0
    assert json.loads(out) == {
        "isAdmin": True,
        "scopes": ["extensions:deploy"],
        "username": "ops",
        "via": "token",
    }


def test_bad_token_is_a_clear_error(instance, monkeypatch, capsys):
    monkeypatch.setenv("TURBOBASE_TOKEN", "tbp_wrong")
    code, out, err = cli(capsys, "whoami")
    assert (code, out) == (1, "")
    assert err == (
        "turbobase: GET /v1/auth/session answered 401 not_authenticated: invalid or revoked token; "
        "set TURBOBASE_TOKEN to a valid token (issue one with: python manage.py tb_token <username> "
        "--scope extensions:deploy)\n"
    )


def test_missing_url_and_token_are_clear_errors(db, monkeypatch, capsys):
    monkeypatch.delenv("TURBOBASE_URL", raising=False)
    monkeypatch.delenv("TURBOBASE_TOKEN", raising=False)
    code, _, err = cli(capsys, "health")
    assert code == 2
    assert err.startswith("turbobase: TURBOBASE_URL is not set;")
    monkeypatch.setenv("TURBOBASE_URL", "http://127.0.0.1:9")
    code, _, err = cli(capsys, "whoami")
    assert code == 2
    assert err.startswith("turbobase: TURBOBASE_TOKEN is not set;")


def test_unreachable_instance_is_a_clear_error(db, monkeypatch, capsys):
    monkeypatch.setenv("TURBOBASE_URL", "http://127.0.0.1:9")
    code, _, err = cli(capsys, "health")
    assert code == 1
    assert (
        err
        == "turbobase: cannot reach Turbobase at http://127.0.0.1:9: is it running (make run)?\n"
    )


def writer_token(owner, monkeypatch) -> None:
    """Settling is a record write: it needs data:write, which the deploy token lacks."""
    monkeypatch.setenv("TURBOBASE_TOKEN", token_issue(user=owner, scopes=["data:write"])[1])


def test_data_settle_with_the_deploy_token_is_insufficient_scope(instance, capsys):
    record = record_create(
        actor=Actor(user=instance), record_type="customer", parent={"company_name": "Initech"}
    ).record
    code, out, err = cli(capsys, "data", "settle", "customer", str(record.pk))
    assert (code, out) == (1, "")
    assert err.startswith(
        "turbobase: POST /v1/data/customer/settle answered 403 insufficient_scope"
    )
    assert "data:write" in err


def test_data_settle_links_a_settle_conflict(instance, monkeypatch, capsys):
    writer_token(instance, monkeypatch)
    record = record_create(
        actor=Actor(user=instance), record_type="customer", parent={"company_name": "Initech"}
    ).record
    # Fake the upstream state the outbound worker leaves: created upstream, link back failed.
    with door_open():
        Record.objects.filter(pk=record.pk).update(sync_state=SyncState.SETTLE_CONFLICT)
    with door_open():
        RecordWriteState.objects.filter(record=record).update(
            status=WriteStatus.SETTLE_CONFLICT,
            reason_code="write_settle_conflict",
            external_id="CUS-1041",
        )
    code, out, err = cli(capsys, "data", "settle", "customer", str(record.pk))
    assert (code, err) == (0, "")
    assert out == f"settled customer {record.pk} → externalId CUS-1041 (synced)\n"
    record.refresh_from_db()
    assert (record.external_id, record.sync_state) == ("CUS-1041", "synced")
    assert RecordWriteState.reads.get(record=record).status == "settled"


def test_data_settle_of_a_row_not_in_conflict_is_409(instance, monkeypatch, capsys):
    writer_token(instance, monkeypatch)
    record = record_create(
        actor=Actor(user=instance), record_type="customer", parent={"company_name": "Initech"}
    ).record
    code, out, err = cli(capsys, "data", "settle", "customer", str(record.pk))
    assert (code, out) == (1, "")
    assert err == (
        f"turbobase: POST /v1/data/customer/settle answered 409 conflict: NOT_SETTLE_CONFLICT "
        f"(pgRowId): customer {record.pk} is pending, not waiting to be settled\n"
    )
    record.refresh_from_db()
    assert (record.external_id, record.sync_state) == (None, "pending")


def test_a_group_without_its_verb_shows_help(capsys):
    code, out, err = cli(capsys, "data")
    assert code == 2
    assert "settle" in err


def test_settings_list_get_set_unset(instance, capsys):
    code, out, _ = cli(capsys, "settings", "list")
    assert code == 0
    assert "processes.slice_max_rows = 500\n" in out
    code, out, _ = cli(capsys, "settings", "set", "processes.slice_max_rows", "50")
    assert (code, out) == (0, "processes.slice_max_rows = 50 (default 500)\n")
    code, out, _ = cli(capsys, "settings", "get", "processes.slice_max_rows")
    assert code == 0
    assert out.splitlines()[:2] == [
        "processes.slice_max_rows = 50 (default 500)",
        "Rows one migration slice works through before it queues the next. [integer, 1–2147483647]",
    ]
    assert out.splitlines()[2].startswith("changed ") and out.splitlines()[2].endswith(" by ops")
    code, out, err = cli(capsys, "settings", "set", "processes.slice_max_rows", "0")
    assert (code, out) == (1, "")
    assert "400 invalid_setting" in err and "processes.slice_max_rows must be between 1" in err
    code, out, _ = cli(capsys, "settings", "unset", "processes.slice_max_rows")
    assert (code, out) == (0, "processes.slice_max_rows = 500\n")


def test_settings_set_sends_true_false_and_digits_as_json_and_refuses_other_text(instance, capsys):
    from guardrails.models import InstanceSetting

    code, out, _ = cli(capsys, "settings", "set", "processes.enabled", "false")
    assert (code, out) == (0, "processes.enabled = false (default true)\n")
    for text in ("off", "on", "1_0", "1,000", "1e3", "+5", " 5", "True"):
        code, out, err = cli(capsys, "settings", "set", "processes.slice_max_rows", text)
        assert (code, out, err) == (
            1,
            "",
            f"turbobase: processes.slice_max_rows: {text!r} is neither a whole number nor "
            "true/false\n",
        )
    # Typed, but the wrong type for the setting: the instance refuses it by its key.
    code, out, err = cli(capsys, "settings", "set", "processes.enabled", "1")
    assert (code, out) == (1, "")
    assert "400 invalid_setting" in err and "processes.enabled must be true or false, not 1" in err
    code, out, err = cli(capsys, "settings", "set", "processes.slice_max_rows", "true")
    assert (code, out) == (1, "")
    assert "processes.slice_max_rows must be a whole number (a JSON integer), not true" in err
    assert dict(InstanceSetting.objects.values_list("key", "value")) == {"processes.enabled": 0}


def test_a_per_source_limit_is_set_with_settings_and_shown_by_sources_list(instance, capsys):
    code, out, _ = cli(capsys, "settings", "set", "sources.netsuite.max_per_second", "5")
    assert (code, out) == (0, "sources.netsuite.max_per_second = 5 (default 0)\n")
    code, out, err = cli(capsys, "settings", "set", "sources.netsuite.max_in_flight", "0")
    assert code == 1 and "sources.netsuite.max_in_flight must be between 1 and 10000" in err
    code, out, _ = cli(capsys, "sources", "list")
    assert (code, out) == (0, "netsuite: 5/s, no limit; 0 in flight, 0 waiting\n")
    code, out, _ = cli(capsys, "settings", "unset", "sources.netsuite.max_per_second")
    assert (code, out) == (0, "sources.netsuite.max_per_second = 0\n")

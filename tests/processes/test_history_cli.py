"""``turbobase history purge [--dry-run] [--finished-before TIME]`` against a live server."""

from __future__ import annotations

import pytest

from kernel.models import token_issue
from processes.models import ProcessRun
from tests.conftest import cli
from tests.processes.history_support import days_ago, history_run, run_ids

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def admins_token(live_server, monkeypatch, admin_user):
    _, raw = token_issue(user=admin_user, scopes=["extensions:deploy"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url)
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)


def test_dry_run_then_purge_then_a_time_of_ones_own(admins_token, capsys):
    old = history_run(finished=days_ago(100), ledger=3, task=True)
    recent = history_run(finished=days_ago(3))
    code, out, err = cli(capsys, "history", "purge", "--dry-run")
    assert (code, out, err) == (
        0,
        "would purge 1 runs: 3 ledger rows, 0 event waits, 1 tasks\n",
        "",
    )
    assert ProcessRun.objects.count() == 2
    code, out, _ = cli(capsys, "--json", "history", "purge")
    assert code == 0
    assert (
        out == '{\n  "archived": null,\n  "auditEvents": 0,\n  "events": 0,\n  "ledgerRows": 3,\n'
        '  "runs": 1,\n  "tasks": 1,\n  "trailRows": 0\n}\n'
    )
    assert str(old.pk) not in run_ids()
    code, out, _ = cli(capsys, "history", "purge", "--finished-before", days_ago(2).isoformat())
    assert (code, out) == (0, "purged 1 runs: 2 ledger rows, 0 event waits, 0 tasks\n")
    assert str(recent.pk) not in run_ids()


def test_a_time_without_its_offset_is_refused_and_nothing_goes(admins_token, capsys):
    history_run(finished=days_ago(100))
    code, out, err = cli(capsys, "history", "purge", "--finished-before", "2026-01-31")
    assert (code, out) == (1, "")
    assert err == (
        "turbobase: POST /v1/history/purge answered 400 invalid_request: HISTORY_PURGE_INVALID "
        "(finishedBefore): finishedBefore must say its offset (Z, +02:00): '2026-01-31' does not\n"
    )
    assert ProcessRun.objects.count() == 1

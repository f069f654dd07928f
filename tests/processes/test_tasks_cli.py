"""``turbobase tasks list | complete | reject`` against a live server, as the assignee's token."""

from __future__ import annotations

import pytest

from kernel.models import token_issue
from processes.human_tasks.models import HumanTask
from tests.conftest import cli
from tests.processes.engine_support import deploy, invoke, pump
from tests.processes.task_support import approval

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def bobs_token(live_server, monkeypatch, admin_user, alice, bob):
    deploy(approval(), by=admin_user)
    _, raw = token_issue(user=bob, scopes=["data:read", "data:write"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url)
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)


def test_list_then_complete_and_reject_from_a_terminal(bobs_token, alice, capsys):
    first = invoke("t:approve-order", {"memo": "PO-1"}, alice)
    second = invoke("t:approve-order", {"memo": "PO-2"}, alice)
    pump()
    one, two = HumanTask.objects.get(run=first), HumanTask.objects.get(run=second)
    code, out, err = cli(capsys, "tasks", "list", "--state", "open")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{two.pk}  open  Approve PO-2  for bob  (t:approve-order {second.pk} approve)",
        f"{one.pk}  open  Approve PO-1  for bob  (t:approve-order {first.pk} approve)",
    ]
    code, out, _ = cli(capsys, "tasks", "complete", str(one.pk), "--output", '{"note": "ok"}')
    assert (code, out) == (
        0,
        f"completed: {one.pk}  completed  Approve PO-1  for bob  (t:approve-order {first.pk} "
        "approve)  by bob\n",
    )
    code, out, _ = cli(capsys, "tasks", "reject", str(two.pk), "--reason", "too dear")
    assert (code, out.endswith("  by bob: too dear\n")) == (0, True)
    code, _, err = cli(capsys, "tasks", "complete", str(one.pk), "--output", "{nope")
    assert code == 1 and err.startswith("turbobase: --output is not JSON: ")
    code, _, err = cli(capsys, "tasks", "reject", str(one.pk), "--reason", "late")
    assert (code, err) == (
        1,
        f"turbobase: POST /v1/tasks/{one.pk}/reject answered 409 task_decided: "
        f"task {one.pk} is already completed; nothing was changed\n",
    )
    one.refresh_from_db(), two.refresh_from_db()
    assert (one.state, one.output, two.state, two.reason) == (
        "completed",
        {"note": "ok"},
        "rejected",
        "too dear",
    )

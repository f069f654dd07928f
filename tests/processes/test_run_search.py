"""``GET /v1/processes/runs``: runs found by process, state, pending reason, time and the input
fields a process declares searchable (``"x-search": true``) — scoped to the caller, keyset pages,
refusals naming the parameter; the deploy refusing a field no search can name; the admin's search
box and ``turbobase processes runs --where``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from kernel.models import token_issue
from processes.contract import ContractInvalid
from processes.history.purge import history_purge
from processes.invoke import run_refuse
from processes.models import ProcessRun, RunSearchKey, RunState
from processes.steering import run_cancel
from tests.conftest import cli
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db

PATH = "/v1/processes/runs"

ORDERS = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:orders',
  input: {
    type: 'object',
    properties: {
      customer: { type: 'string', 'x-search': true },
      amount: { type: 'integer', 'x-search': true },
      rush: { type: 'boolean', 'x-search': true },
      memo: { type: 'string' },
    },
  },
  steps: [{ id: 'a', recordType: 'salesOrder', build: (ctx) => ({ parent: { memo: 'x' } }) }],
});
"""

RETURNS = ORDERS.replace("acme:orders", "acme:returns").replace(
    "amount: { type: 'integer', 'x-search': true }", "amount: { type: 'integer' }"
)


@pytest.fixture
def processes(admin_user):
    deploy(ORDERS, by=admin_user, name="processes/orders.ts")
    deploy(RETURNS, by=admin_user, name="processes/returns.ts")


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [run["runId"] for run in response.json()["runs"]]


def _newest_first(*runs: ProcessRun) -> list[str]:
    return [str(r.pk) for r in sorted(runs, key=lambda r: (r.created_at, r.pk), reverse=True)]


def test_an_input_field_finds_the_runs_that_held_it_across_processes(processes, alice, alice_api):
    c1 = invoke("acme:orders", {"customer": "C-1", "amount": 5}, alice)
    invoke("acme:orders", {"customer": "C-2", "amount": 5}, alice)
    returned = invoke("acme:returns", {"customer": "C-1"}, alice)
    assert _ids(alice_api.get(PATH, {"input.customer": "C-1"})) == _newest_first(c1, returned)
    assert _ids(alice_api.get(PATH, {"input.customer": "C-1", "processId": "acme:orders"})) == [
        str(c1.pk)
    ]
    # Several input fields must all hold; numbers and booleans are named as JSON writes them.
    rush = invoke("acme:orders", {"customer": "C-1", "amount": 7, "rush": True}, alice)
    found = alice_api.get(PATH, {"input.customer": "C-1", "input.amount": "7"})
    assert _ids(found) == [str(rush.pk)]
    assert _ids(alice_api.get(PATH, {"input.rush": "true"})) == [str(rush.pk)]
    assert _ids(alice_api.get(PATH, {"input.customer": "C-9"})) == []
    body = found.json()["runs"][0]
    assert (body["processId"], body["state"], found.json()["next"]) == (
        "acme:orders",
        "queued",
        None,
    )


def test_a_long_value_is_found_exactly(processes, alice, alice_api):
    long_value = "L" * 500
    run = invoke("acme:orders", {"customer": long_value}, alice)
    invoke("acme:orders", {"customer": long_value[:-1] + "M"}, alice)
    assert _ids(alice_api.get(PATH, {"input.customer": long_value})) == [str(run.pk)]
    assert RunSearchKey.objects.get(run_id=run.pk).value.startswith("sha256:")


def test_a_person_finds_only_their_runs_an_administrator_every_run(
    processes, alice, bob, alice_api, admin_api
):
    mine = invoke("acme:orders", {"customer": "C-1"}, alice)
    theirs = invoke("acme:orders", {"customer": "C-1"}, bob)
    assert _ids(alice_api.get(PATH, {"input.customer": "C-1"})) == [str(mine.pk)]
    assert _ids(admin_api.get(PATH, {"input.customer": "C-1"})) == _newest_first(mine, theirs)


def test_state_pending_reason_and_pages(processes, alice, alice_api):
    runs = [invoke("acme:orders", {"customer": "C-1", "amount": n}, alice) for n in range(5)]
    run_cancel(user=alice, run_id=str(runs[1].pk))
    cancelled = _ids(alice_api.get(PATH, {"input.customer": "C-1", "state": "cancelled"}))
    assert cancelled == [str(runs[1].pk)]
    queued = alice_api.get(PATH, {"input.customer": "C-1", "pendingReason": "queued"})
    assert _ids(queued) == _newest_first(*runs[:1], *runs[2:])
    ids, cursor = [], None
    while True:
        page = alice_api.get(
            PATH, {"input.customer": "C-1", "limit": 2, **({"cursor": cursor} if cursor else {})}
        )
        ids += _ids(page)
        cursor = page.json()["next"]
        if cursor is None:
            break
    assert ids == _newest_first(*runs)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"input.memo": "x"}, "input.memo"),  # declared, but not searchable
        ({"input.nope": "x"}, "input.nope"),
        ({"input.amount": "5", "processId": "acme:returns"}, "input.amount"),  # not on that one
        ({"input.customer": ["C-1", "C-2"]}, "input.customer"),  # one value per field
        ({"pendingReason": "asleep"}, "pendingReason"),
        ({"state": "done"}, "state"),
        ({"customer": "C-1"}, "customer"),
        ({"cursor": "nonsense"}, "cursor"),
    ],
)
def test_a_filter_it_cannot_apply_is_refused_by_name(processes, alice, alice_api, query, field):
    invoke("acme:orders", {"customer": "C-1"}, alice)
    response = alice_api.get(PATH, query)
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["error"], body["rejection"]["code"], body["rejection"]["field"]) == (
        "invalid_request",
        "INVALID_FILTER",
        field,
    )


@pytest.mark.parametrize(
    ("prop", "field", "message"),
    [
        (
            "{ type: 'object', 'x-search': true }",
            "input.properties.addr.x-search",
            "string, integer",
        ),
        ("{ 'x-search': true }", "input.properties.addr.x-search", "declare its type"),
        (
            "{ type: 'string', 'x-search': 'yes' }",
            "input.properties.addr.x-search",
            "true or false",
        ),
    ],
)
def test_the_deploy_refuses_a_field_no_search_can_name(admin_user, prop, field, message):
    source = ORDERS.replace("memo: { type: 'string' }", f"addr: {prop}")
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user, name="processes/orders.ts")
    assert refused.value.field == field
    assert message in refused.value.message


def test_a_refused_run_is_found_by_its_input_too(processes, admin_user, alice, admin_api):
    refused = run_refuse(
        process_id="acme:orders",
        body={"customer": "C-5"},
        user=alice,
        code="invalid_input",
        field="input.memo",
        message="x",
    )
    assert refused.state == RunState.REFUSED
    assert _ids(admin_api.get(PATH, {"input.customer": "C-5"})) == [str(refused.pk)]


def test_the_admin_search_box_takes_an_input_field(processes, alice, operator):
    wanted = invoke("acme:orders", {"customer": "C-1"}, alice)
    other = invoke("acme:orders", {"customer": "C-2"}, alice)
    page = operator.get("/admin/processes/processrun/", {"q": "input.customer=C-1"})
    assert page.status_code == 200
    html = page.content.decode()
    assert str(wanted.pk) in html and str(other.pk) not in html


@pytest.fixture
def instance(live_server, monkeypatch, admin_user):
    _, raw = token_issue(user=admin_user, scopes=["data:read"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url + "/")
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)


@pytest.mark.django_db(transaction=True)
def test_the_cli_finds_runs_with_where(processes, instance, alice, capsys):
    wanted = invoke("acme:orders", {"customer": "C-1", "amount": 3}, alice)
    invoke("acme:orders", {"customer": "C-1", "amount": 4}, alice)
    code, out, err = cli(
        capsys, "processes", "runs", "--where", "input.customer=C-1", "--where", "input.amount=3"
    )
    assert (code, err) == (0, "")
    assert out.startswith(f"{wanted.run_id}  acme:orders  async  queued  outstanding=")
    assert len(out.splitlines()) == 1
    code, out, err = cli(capsys, "processes", "runs", "--where", "customer=C-1")
    assert code != 0 and "input.FIELD=VALUE" in err
    code, out, err = cli(capsys, "processes", "runs", "--where", "input.memo=x")
    assert code != 0 and "input.memo" in err


def test_a_purged_run_takes_its_search_keys_with_it(processes, alice, admin_user, admin_api):
    gone = invoke("acme:orders", {"customer": "C-1"}, alice)
    kept = invoke("acme:orders", {"customer": "C-1"}, alice)
    run_cancel(user=alice, run_id=str(gone.pk))
    ProcessRun.objects.filter(pk=gone.pk).update(finished_at=timezone.now() - timedelta(days=400))
    assert history_purge(by=admin_user).runs == 1
    assert not RunSearchKey.objects.filter(run_id=gone.pk).exists()
    assert _ids(admin_api.get(PATH, {"input.customer": "C-1"})) == [str(kept.pk)]

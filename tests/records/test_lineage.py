"""``GET /v1/data/<type>/<pgRowId>/lineage``: every write that touched a record, oldest first —
who, which run, process version and step, an excerpt of the run's input, what the source said —
read under the record's own read policy; ``turbobase data lineage``; the admin's record page."""

from __future__ import annotations

import pytest

from kernel.models import token_issue
from processes.models import ProcessRun
from records.boundary import record_create, record_delete, record_update
from records.errors import PayloadInvalid
from records.models import Record
from records.trail import Actor
from tests.conftest import cli
from tests.processes.conftest import outbound_drain_all
from tests.processes.engine_support import deploy, invoke, pump

pytestmark = pytest.mark.django_db

CREATE_THEN_STAMP = """\
import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:onboard',
  input: { type: 'object', properties: { name: { type: 'string' } } },
  steps: [
    { id: 'make', recordType: 'customer', build: (ctx) => ({ parent: { company_name: ctx.input.name } }) },
    { id: 'stamp', recordType: 'customer', update: { pgRowId: (ctx) => ctx.steps.make.pgRowId },
      build: (ctx) => ({ parent: { memo: 'onboarded' } }) },
  ],
});
"""


def _path(record_type: str, pg_row_id: object) -> str:
    return f"/v1/data/{record_type}/{pg_row_id}/lineage"


@pytest.fixture
def onboarded(admin_user, alice):
    """A customer a run created and stamped (its source confirmed both), then an app's change."""
    deploy(CREATE_THEN_STAMP, by=admin_user)
    run = invoke("acme:onboard", {"name": "Acme " + "x" * 300}, alice)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    record = Record.reads.get(record_type="customer")
    record_update(
        actor=Actor(user=alice), record_type="customer", pg_row_id=record.pk, parent={"memo": "m"}
    )
    outbound_drain_all()
    return run, Record.reads.get(pk=record.pk)


def test_a_records_writes_oldest_first_with_their_run_step_and_source(onboarded, alice_api):
    run, record = onboarded
    response = alice_api.get(_path("customer", record.pk))
    assert response.status_code == 200, response.content
    entries = response.json()
    assert [(e["action"], e["outcome"], e["stepId"]) for e in entries] == [
        ("create", "allowed", "make"),
        ("update", "allowed", "stamp"),
        ("update", "allowed", None),
    ]
    made, stamped, by_app = entries
    assert {k: made[k] for k in ("actor", "runId", "processId", "version")} == {
        "actor": "alice",
        "runId": str(run.pk),
        "processId": "acme:onboard",
        "version": run.module_version,
    }
    assert made["inputExcerpt"].startswith('{"name":"Acme xxx')
    assert len(made["inputExcerpt"]) == 200 and made["inputExcerpt"].endswith("…")
    assert made["source"] == {"verdict": "confirmed", "externalId": record.external_id}
    assert stamped["source"]["verdict"] == "confirmed" and stamped["runId"] == str(run.pk)
    assert (by_app["runId"], by_app["processId"], by_app["inputExcerpt"]) == (None, None, None)
    assert by_app["source"]["verdict"] == "confirmed"
    assert entries == sorted(entries, key=lambda e: e["at"])


def test_a_refused_write_is_on_it_and_a_run_you_cannot_see_keeps_its_input(onboarded, bob, bob_api):
    _, record = onboarded
    with pytest.raises(PayloadInvalid):
        record_update(actor=Actor(user=bob), record_type="customer", pg_row_id=record.pk, parent={})
    entries = bob_api.get(_path("customer", record.pk)).json()  # customer: read by everyone
    assert (entries[-1]["outcome"], entries[-1]["actor"]) == ("refused", "bob")
    assert entries[0]["processId"] == "acme:onboard"
    assert entries[0]["inputExcerpt"] is None  # alice's run: 404 to bob, so is its input


def test_a_record_you_cannot_read_is_404_and_an_administrator_reads_a_deleted_ones(
    alice, alice_api, bob_api, admin_api
):
    created = record_create(
        actor=Actor(user=alice), record_type="legacy_customer", parent={"company_name": "L"}
    )
    pk = created.record.pk
    assert len(alice_api.get(_path("legacy_customer", pk)).json()) == 1
    refused = bob_api.get(_path("legacy_customer", pk))  # legacy_customer: the owner only
    assert (refused.status_code, refused.json()["error"]) == (404, "record_not_found")
    record_delete(actor=Actor(user=alice), record_type="legacy_customer", pg_row_id=pk)
    assert alice_api.get(_path("legacy_customer", pk)).status_code == 404  # gone
    kept = admin_api.get(_path("legacy_customer", pk)).json()
    assert [(e["action"], e["outcome"]) for e in kept] == [
        ("create", "allowed"),
        ("delete", "allowed"),
    ]
    for wrong in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        assert admin_api.get(_path("legacy_customer", wrong)).status_code == 404
    assert admin_api.get(_path("nope", pk)).status_code == 404


def test_the_cli_prints_it(onboarded, live_server, monkeypatch, capsys, alice):
    run, record = onboarded
    _, raw = token_issue(user=alice, scopes=["data:read"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url + "/")
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    code, out, err = cli(capsys, "data", "lineage", "customer", str(record.pk))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].endswith(
        f"create allowed  by alice  acme:onboard v{run.module_version} run {run.pk} step make"
        f"  source confirmed {record.external_id}"
    )
    assert lines[2].endswith(f"update allowed  by alice  source confirmed {record.external_id}")


def test_the_admin_record_page_lists_it_and_links_each_run(onboarded, operator):
    run, record = onboarded
    page = operator.get(f"/admin/records/record/{record.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="lineage-run"') == 2
    assert f'href="/admin/processes/processrun/{run.pk}/change/"' in html
    assert ProcessRun.objects.filter(pk=run.pk).exists()

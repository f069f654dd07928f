"""The demo project (``demo/``, loaded by ``processes/demo.py``): the seed's migration deployed as a
bundle at ``make run`` through the CLI's own project reader,
a batch of ``migration_item`` rows to move, and a migration that moves them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from extensions.bundle import bundle_plan
from extensions.models import ExtensionModule, ExtensionVersion
from extensions.project import project_bundle
from guardrails.settings import setting_set
from processes.demo import DEMO_BATCH_ROWS, DEMO_PROJECT, demo_load
from processes.invoke import run_invoke
from processes.schedules.models import ProcessSchedule
from records.models import Record
from tests.conftest import make_user
from tests.processes.engine_support import deploy, pump

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_demo_deploys_once_generates_a_batch_once_and_the_migration_moves_it():
    admin, demo = make_user("admin", admin=True), make_user("demo")
    said: list[str] = []
    demo_load(admin=admin, user=demo, write=said.append)
    assert said.pop().startswith(
        "demo trial-to-paid run "
    )  # tests/processes/test_demo_trial_to_paid.py
    assert said == [
        "demo extensions deployed: acme:classify-customer, acme:migrate-customers-tracked, "
        "acme:raise-po-and-bill, acme:trial-to-paid, "
        "acme:legacy-customer-name",
        "demo migration batch 2026-10: 200 pending migration_item rows (invoke "
        'acme:migrate-customers-tracked with {"batch": "2026-10"})',
    ]
    again: list[str] = []
    demo_load(admin=admin, user=demo, write=again.append)
    assert again == []  # unchanged code, keyed rows: nothing new on the next start
    assert ExtensionVersion.objects.count() == 5
    assert list(ProcessSchedule.objects.values_list("name", flat=True)) == [
        "demo-migrate-customers-nightly"
    ]
    items = Record.reads.filter(record_type="migration_item", fields__batch="2026-10")
    assert items.count() == DEMO_BATCH_ROWS
    assert set(items.values_list("owner__username", flat=True)) == {"demo"}

    setting_set("processes.slice_max_rows", 50)
    run = run_invoke(
        process_id="acme:migrate-customers-tracked", body={"batch": "2026-10"}, user=demo
    )
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding, run.slices) == ("committed", 0, 4)
    assert Record.reads.filter(record_type="customer").count() == DEMO_BATCH_ROWS
    assert set(items.values_list("fields__status", flat=True)) == {"sent"}


def test_a_plan_of_the_demo_project_right_after_the_demo_load_changes_nothing():
    admin, demo = make_user("admin", admin=True), make_user("demo")
    demo_load(admin=admin, user=demo, write=lambda line: None)
    plan = bundle_plan(data=project_bundle(DEMO_PROJECT), by=admin)
    assert {(m.id, m.change) for m in plan.modules} == {
        ("acme:classify-customer", "unchanged"),
        ("acme:migrate-customers-tracked", "unchanged"),
        ("acme:raise-po-and-bill", "unchanged"),
        ("acme:trial-to-paid", "unchanged"),
        ("acme:legacy-customer-name", "unchanged"),
    }
    assert [item["change"] for item in plan.parts["schedules"]] == ["unchanged"]
    assert plan.undeclared == []


def test_tb_demo_finds_the_processes_demo():
    call_command("tb_demo", stdout=io.StringIO())
    assert sorted(ExtensionModule.objects.values_list("id", flat=True)) == [
        "acme:classify-customer",
        "acme:legacy-customer-name",
        "acme:migrate-customers-tracked",
        "acme:raise-po-and-bill",
        "acme:trial-to-paid",
    ]
    assert (
        Record.reads.filter(record_type="migration_item", fields__batch="2026-10").count()
        == DEMO_BATCH_ROWS
    )


def test_the_seeds_migrate_customers_runs_as_written_on_the_demo_data_and_twice_writes_nothing(
    admin_user,
):
    call_command("tb_demo", stdout=io.StringIO())
    demo = get_user_model().objects.get(username="demo")
    deploy(
        (FIXTURES / "processes" / "migrate-customers.ts").read_text(),
        by=admin_user,
        name="processes/migrate-customers.ts",
    )
    legacy = sorted(
        Record.reads.filter(record_type="legacy_customer").values_list(
            "fields__company_name", flat=True
        )
    )
    assert legacy == ["Acme Wholesale", "Globex Retail"]
    customers_before = Record.reads.filter(record_type="customer").count()

    first = run_invoke(process_id="acme:migrate-customers", body={}, user=demo)
    pump()
    first.refresh_from_db()
    assert first.state == "committed", first.reason
    steps = list(first.ledger.order_by("sequence").values_list("row_key", "disposition"))
    assert steps == [("L-100", "confirmed"), ("L-101", "confirmed")]
    assert Record.reads.filter(record_type="customer").count() == customers_before + 2

    second = run_invoke(process_id="acme:migrate-customers", body={}, user=demo)
    pump()
    second.refresh_from_db()
    assert second.state == "committed", second.reason
    assert list(second.ledger.order_by("sequence").values_list("row_key", "disposition")) == [
        ("L-100", "skipped"),
        ("L-101", "skipped"),
    ]
    assert Record.reads.filter(record_type="customer").count() == customers_before + 2


def test_the_demos_ai_step_answers_with_the_local_provider(admin_user):
    demo = make_user("demo")
    demo_load(admin=admin_user, user=demo, write=lambda line: None)
    run = run_invoke(process_id="acme:classify-customer", body={"name": "Initech"}, user=demo)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    segment = run.ledger.get(step_id="classify").answer["segment"]
    assert segment in ("retail", "wholesale")
    customer = Record.reads.get(record_type="customer", fields__company_name="Initech")
    assert customer.fields["memo"] == f"segment: {segment}"

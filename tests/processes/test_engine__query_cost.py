"""What a ``ctx.query`` inside a delivery costs: on PostgreSQL, outside a transaction (a lane
worker), one statement a read — ``SET LOCAL statement_timeout`` and the SELECT together, after the
group's statement that writes the steps before it — and the invoker's access checked once a
delivery. SQLite reads under its progress handler; the answers are the same on both."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from processes.engine.runner import run_deliver
from records.models import Record
from tests.processes.engine_support import deploy, invoke

pytestmark = pytest.mark.django_db(transaction=True)

READS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:reads',
  input: { type: 'object' },
  steps: [
    { id: 'a', recordType: 'legacy_customer', build: (ctx) => ({ parent: { name: 'first' } }) },
    { id: 'b', recordType: 'legacy_customer', build: async (ctx) => {
        const seen = await ctx.query(`legacy_customer?select=name&pg_row_id=eq.${ctx.steps.a.pgRowId}`);
        return { parent: { name: 'second', custom: { seen: seen.map((r) => r.name) } } };
    } },
    { id: 'c', recordType: 'legacy_customer', build: async (ctx) => {
        const seen = await ctx.query('legacy_customer?select=name&order=name');
        return { parent: { name: 'third', custom: { seen: seen.map((r) => r.name) } } };
    } },
  ],
});
"""


# The access fingerprint's read of the invoker's groups.
_GROUP_NAMES = 'SELECT "auth_group"."name" AS "name" FROM "auth_group"'


def _made(run, step_id: str) -> dict:
    return Record.reads.get(pk=run.ledger.get(step_id=step_id).pg_row_id).fields


def test_each_read_in_a_chain_is_one_statement_after_the_writes_before_it(admin_user, alice):
    deploy(READS, by=admin_user)
    run = invoke("t:reads", {}, alice)
    with CaptureQueriesContext(connection) as queries:
        run_deliver(str(run.pk))
    run.refresh_from_db()
    assert (run.state, run.writes) == ("committed", 3)
    # Each read saw every write before it.
    assert _made(run, "b") == {"name": "second", "custom": {"seen": ["first"]}}
    assert _made(run, "c") == {"name": "third", "custom": {"seen": ["first", "second"]}}
    sent = [q["sql"] for q in queries.captured_queries]
    # The invoker's access: checked at the delivery's first read only (the user, their groups).
    assert sum(1 for sql in sent if sql.startswith('SELECT "auth_user"')) == 1
    assert sum(1 for sql in sent if sql.startswith(_GROUP_NAMES)) == 1
    if connection.vendor != "postgresql":
        return
    reads = [n for n, sql in enumerate(sent) if "statement_timeout" in sql]
    assert len(reads) == 2
    for n in reads:
        # One statement: the bound and the SELECT; the group's statement just before it.
        assert sent[n].startswith("SET LOCAL statement_timeout = ")
        assert '; SELECT "record"."fields"' in sent[n]
        before = [q for q in sent[:n] if not q.startswith(('SELECT "auth_user"', _GROUP_NAMES))]
        assert before[-1].startswith("WITH gate AS")
    assert not [sql for sql in sent if sql in ("BEGIN", "COMMIT") or "DECLARE" in sql]


TIMED = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 't:timed',
  input: { type: 'object' },
  steps: [
    { id: 'q', recordType: 'legacy_customer', build: async (ctx) => {
        const seen = await ctx.query('legacy_customer?select=name');
        return { parent: { n: seen.length } };
    } },
  ],
});
"""


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's statement_timeout")
def test_a_read_past_its_time_ceiling_fails_the_step_by_name(admin_user, alice):
    """Another session holds the record table: the read waits until the database cancels it."""
    from guardrails.settings import setting_set

    deploy(TIMED, by=admin_user)
    setting_set("processes.query_timeout_ms", 200)
    run = invoke("t:timed", {}, alice)
    settings = connection.settings_dict
    other = psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        password=settings["PASSWORD"] or None,
    )
    try:
        other.execute("LOCK TABLE record IN ACCESS EXCLUSIVE MODE")
        run_deliver(str(run.pk))
    finally:
        other.rollback()
        other.close()
    run.refresh_from_db()
    step = run.ledger.get(step_id="q")
    assert (run.state, step.refusal_code) == ("failed", "QUERY_TIMEOUT")
    assert step.refusal_message == (
        "the read passed processes.query_timeout_ms (200 ms) and was abandoned"
    )

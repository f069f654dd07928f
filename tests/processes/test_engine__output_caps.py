"""A step's failure is kept bounded and storable: the ledger and the run never hold it whole."""

from __future__ import annotations

import re

import pytest

from kernel.text import MESSAGE_MAX_CHARS
from records.models import Record
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = pytest.mark.django_db


def run_failing_step(admin_user, user, thrown_js: str):
    source = f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: 't:loud',
  input: {{ type: 'object' }},
  steps: [
    {{ id: 'a', recordType: 'salesOrder', build: () => {{ throw new Error({thrown_js}); }} }},
    {{ id: 'b', recordType: 'salesOrder', build: () => ({{ parent: {{ memo: 'b' }} }}) }},
  ],
}});
"""
    deploy(source, by=admin_user)
    run = invoke("t:loud", {}, user)
    pump()
    run.refresh_from_db()
    return run


@pytest.mark.parametrize("bad", ["\\u0000", "\\ud800"])
def test_a_step_error_with_unstorable_text_fails_the_step_cleanly(admin_user, alice, bad):
    # Before: the ledger insert failed on the NUL / surrogate and the run died "in the engine".
    run = run_failing_step(admin_user, alice, f"'bro{bad}ken'")
    assert run.state == "failed"
    assert ledger(run) == [("a", "failed", "sandbox_script_error"), ("b", "skipped", None)]
    message = run.ledger.get(step_id="a").refusal_message
    assert message.startswith("Error: bro\ufffdken (at processes/process.ts:6:")
    assert run.reason == f"step 'a' failed: sandbox_script_error: {message}"
    assert Record.reads.count() == 0


def test_a_10_mib_step_error_is_cut_on_the_ledger_and_the_run(admin_user, alice):
    run = run_failing_step(admin_user, alice, "'e'.repeat(10 * 1024 * 1024)")
    assert run.state == "failed"
    message = run.ledger.get(step_id="a").refusal_message
    assert len(message) == MESSAGE_MAX_CHARS
    assert re.fullmatch(r"Error: e+… \[truncated [0-9]+ chars\]", message)
    assert run.reason == f"step 'a' failed: sandbox_script_error: {message}"
    assert Record.reads.count() == 0

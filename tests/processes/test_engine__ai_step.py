"""The AI step: asked once per run (and row), its answer on the ledger and on ctx.steps[id].answer.

The ``openai`` provider is exercised against a local OpenAI-compatible server that counts the
questions it is asked, so "does not ask (or bill) again" is counted, not assumed.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from guardrails.settings import setting_set
from processes.ai.local import LocalProvider
from processes.contract import ContractInvalid
from processes.models import ProcessRun
from processes.steering import run_resume
from records.boundary import record_create
from records.door import door_open
from records.models import Record, RecordWriteState
from records.trail import Actor
from sources.scripting import sandbox_script_clear, sandbox_script_set
from tests.conftest import client_for
from tests.processes.engine_support import deploy, invoke, ledger, pump

pytestmark = pytest.mark.django_db

CLASSIFY = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:classify-customer',
  input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  steps: [
    { id: 'classify', ai: {
        prompt: (ctx) => `Which segment is ${ctx.input.name} in?`,
        schema: { type: 'object', properties: { segment: { enum: ['retail', 'wholesale'] } },
                  required: ['segment'] },
    } },
    { id: 'customer', recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: ctx.input.name, memo: ctx.steps.classify.answer.segment } }) },
  ],
});
"""

MIGRATE = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:tag-legacy',
  input: { type: 'object' },
  eachRow: { outstanding: () => 'legacy_customer?select=pg_row_id,id,company_name&tag=is.null&order=id', key: 'id' },
  steps: [
    { id: 'tag', ai: { prompt: (ctx) => `Tag ${ctx.row.company_name}` } },
    // L-2 is never stamped, so every later slice of the run offers it again.
    { id: 'note', recordType: 'legacy_customer', update: { pgRowId: (ctx) => ctx.row.pg_row_id },
      when: (ctx) => ctx.row.id !== 'L-2',
      build: (ctx) => ({ parent: { tag: ctx.steps.tag.answer } }) },
  ],
});
"""


class FakeModel:
    """An OpenAI-compatible chat-completions server that counts questions and can refuse."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.refuse: tuple[int, dict] | None = None
        self.script: list[tuple[int, dict]] = []  # answered first, one per question
        self.content: str | None = None


@pytest.fixture
def model(settings) -> Iterator[FakeModel]:
    fake = FakeModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.path == "/v1/chat/completions"
            assert self.headers["Authorization"] == "Bearer sk-test"
            fake.prompts.append(body["messages"][0]["content"])
            status, answer = (
                (fake.script.pop(0) if fake.script else None)
                or fake.refuse
                or (
                    200,
                    {
                        "choices": [
                            {
                                "message": {
                                    "content": fake.content
                                    if fake.content is not None
                                    else f"tag for {body['messages'][0]['content']}"
                                }
                            }
                        ]
                    },
                )
            )
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.TURBOBASE_AI_PROVIDER = "openai"
    settings.TURBOBASE_AI_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    settings.TURBOBASE_AI_MODEL = "test-model"
    import os

    os.environ["TURBOBASE_AI_API_KEY"] = "sk-test"
    yield fake
    os.environ.pop("TURBOBASE_AI_API_KEY", None)
    server.shutdown()
    server.server_close()


def test_the_answer_is_on_the_ledger_and_on_ctx_steps_for_the_next_step(admin_user, alice):
    deploy(CLASSIFY, by=admin_user)
    run = invoke("acme:classify-customer", {"name": "Acme Wholesale"}, alice)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert ledger(run) == [("classify", "confirmed", None), ("customer", "confirmed", None)]
    expected = LocalProvider().answer(
        prompt="Which segment is Acme Wholesale in?",
        schema={
            "type": "object",
            "properties": {"segment": {"enum": ["retail", "wholesale"]}},
            "required": ["segment"],
        },
    )
    assert run.ledger.get(step_id="classify").answer == expected
    assert Record.reads.get(record_type="customer").fields == {
        "company_name": "Acme Wholesale",
        "memo": expected["segment"],
    }


def test_a_later_slice_hands_the_answer_on_as_skipped_and_a_new_run_asks_again(
    admin_user, alice, model
):
    from guardrails.settings import setting_set

    for n in range(1, 4):
        record_create(
            actor=Actor(user=alice),
            record_type="legacy_customer",
            parent={"id": f"L-{n}", "company_name": f"Company {n}"},
        )
    setting_set("processes.slice_max_rows", 2)
    setting_set("processes.slice_cap", 2)
    deploy(MIGRATE, by=admin_user)
    run = invoke("acme:tag-legacy", {}, alice)
    pump()
    run.refresh_from_db()
    assert model.prompts == [
        "Tag Company 1",
        "Tag Company 2",
        "Tag Company 3",
    ]  # one question per row
    tags = [
        (r.slice, r.row_key, r.disposition, r.skip_reason, r.answer)
        for r in run.ledger.filter(step_id="tag").order_by("sequence")
    ]
    assert tags == [
        (1, "L-1", "confirmed", "", "tag for Tag Company 1"),
        (1, "L-2", "confirmed", "", "tag for Tag Company 2"),
        (
            2,
            "L-2",
            "skipped",
            "reused",
            "tag for Tag Company 2",
        ),  # re-offered: handed on, not asked
        (2, "L-3", "confirmed", "", "tag for Tag Company 3"),
    ]
    assert run.state == "committed", run.reason
    assert sorted(
        Record.reads.filter(record_type="legacy_customer").values_list("fields__tag", flat=True),
        key=str,
    ) == [None, "tag for Tag Company 1", "tag for Tag Company 3"]

    invoke("acme:tag-legacy", {}, alice)
    pump()
    assert model.prompts[3:] == ["Tag Company 2"]  # a new run asks again, once


def test_a_provider_refusal_fails_the_step_with_the_providers_code(admin_user, alice, model):
    model.refuse = (400, {"error": {"code": "context_length_exceeded", "message": "too long"}})
    deploy(CLASSIFY, by=admin_user)
    run = invoke("acme:classify-customer", {"name": "Acme"}, alice)
    pump()
    run.refresh_from_db()
    assert len(model.prompts) == 1  # a 4xx other than 429 is not retried
    assert ledger(run)[0] == ("classify", "failed", "context_length_exceeded")
    row = run.ledger.get(step_id="classify")
    assert (row.refusal_field, row.refusal_message) == (
        "ai",
        "the AI provider refused (400): too long",
    )
    assert run.state == "failed"
    assert not Record.reads.filter(record_type="customer").exists()


def test_an_answer_that_does_not_fit_the_schema_fails_the_step(admin_user, alice, model):
    model.content = json.dumps({"segment": "government"})
    deploy(CLASSIFY, by=admin_user)
    run = invoke("acme:classify-customer", {"name": "Acme"}, alice)
    pump()
    run.refresh_from_db()
    assert ledger(run)[0] == ("classify", "failed", "AI_ANSWER_INVALID")
    assert "does not fit ai.schema" in run.ledger.get(step_id="classify").refusal_message


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ("{ id: 'a', ai: { schema: { type: 'object' } } }", "steps[0].ai.prompt"),
        ("{ id: 'a', ai: { prompt: 'not a function' } }", "steps[0].ai.prompt"),
        (
            "{ id: 'a', ai: { prompt: (ctx) => 'q', schema: { type: 'nonsense' } } }",
            "steps[0].ai.schema.type",
        ),
        ("{ id: 'a', ai: { prompt: (ctx) => 'q', model: 'gpt' } }", "steps[0].ai.model"),
        (
            "{ id: 'a', recordType: 'customer', ai: { prompt: (ctx) => 'q' } }",
            "steps[0].recordType",
        ),
    ],
)
def test_a_malformed_ai_step_is_refused_at_deploy_naming_the_field(admin_user, step, field):
    source = (
        "import { defineProcess } from '@turbobase/extensions';\n"
        f"export default defineProcess({{ id: 't:ai', input: {{ type: 'object' }}, steps: [{step}] }});\n"
    )
    with pytest.raises(ContractInvalid) as refused:
        deploy(source, by=admin_user)
    assert refused.value.field == field


WAITS = """import { defineProcess } from '@turbobase/extensions';
export default defineProcess({
  id: 'acme:classify-then-order',
  input: { type: 'object' },
  steps: [
    { id: 'classify', ai: { prompt: () => 'Which vendor?' } },
    { id: 'po', recordType: 'purchaseOrder', awaitSource: true,
      build: (ctx) => ({ parent: { entity_id: 'V-1', memo: ctx.steps.classify.answer }, lines: [{ item: 'x' }] }) },
    { id: 'note', recordType: 'legacy_customer',
      build: (ctx) => ({ parent: { note: `${ctx.steps.classify.answer} / ${ctx.steps.po.externalId}` } }) },
  ],
});
"""


def test_a_delivery_after_a_wait_reads_the_answer_from_the_ledger_and_does_not_ask_again(
    admin_user, alice, model
):
    deploy(WAITS, by=admin_user)
    run = invoke("acme:classify-then-order", {}, alice)
    pump()  # first delivery parks on the PO's verdict; the source confirms; a second delivery ends it
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert model.prompts == ["Which vendor?"]
    po = Record.reads.get(record_type="purchaseOrder")
    assert Record.reads.get(record_type="legacy_customer").fields == {
        "note": f"tag for Which vendor? / {po.external_id}"
    }


def test_a_resumed_run_hands_the_answer_on_and_does_not_ask_again(admin_user, alice, model):
    sandbox_script_set("purchaseOrder", never_answer=True)
    setting_set("processes.await_source_budget_ms", 1)
    deploy(WAITS, by=admin_user)
    run = invoke("acme:classify-then-order", {}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 1)  # stopped on the po's wait
    sandbox_script_clear()  # the source answers again, and the backed-off write is due now
    with door_open():
        RecordWriteState.objects.filter(status="pending").update(next_attempt_at=None)
    setting_set("processes.await_source_budget_ms", 60_000)
    run_resume(user=alice, run_id=str(run.pk))
    pump()
    run.refresh_from_db()
    assert (run.state, run.outstanding) == ("committed", 0), run.reason
    assert model.prompts == ["Which vendor?"]  # asked once, by the first delivery
    assert run.ledger.get(step_id="classify").answer == "tag for Which vendor?"
    po = Record.reads.get(record_type="purchaseOrder")
    assert Record.reads.get(record_type="legacy_customer").fields == {
        "note": f"tag for Which vendor? / {po.external_id}"
    }


UNAVAILABLE = (503, {"error": {"code": "overloaded", "message": "try later"}})


def _retry_now(run) -> None:
    """The retry's time has come (``retryAt`` moved into the past; ``pump`` delivers it)."""
    ProcessRun.objects.filter(pk=run.pk).update(wake_at=timezone.now() - timedelta(seconds=1))


def test_a_transient_failure_parks_the_run_retrying_then_the_next_delivery_asks_again(
    admin_user, alice, model
):
    model.script = [UNAVAILABLE, (429, {"error": {"code": "rate_limit_exceeded"}})]
    model.content = json.dumps({"segment": "retail"})
    deploy(CLASSIFY, by=admin_user)
    before = timezone.now()
    run = invoke("acme:classify-customer", {"name": "Acme"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.pending_reason, run.transient_attempts, run.lease_owner) == (
        "running",
        "retrying",
        1,
        "",
    )
    assert timedelta(seconds=1) <= run.wake_at - before < timedelta(seconds=30)
    read = client_for(alice).get(f"/v1/processes/runs/{run.pk}").json()
    assert read["run"]["pendingReason"] == "retrying"
    assert read["run"]["retryAt"] == run.wake_at.isoformat().replace("+00:00", "Z")
    assert read["run"]["wakeAt"] is None
    assert ledger(run) == []  # no row per attempt
    # A stray delivery before retryAt does not ask early.
    ProcessRun.objects.filter(pk=run.pk).update(pending_reason="running")
    pump()
    run.refresh_from_db()
    assert (len(model.prompts), run.pending_reason) == (1, "retrying")
    _retry_now(run)
    pump()
    run.refresh_from_db()
    assert (run.pending_reason, run.transient_attempts, len(model.prompts)) == ("retrying", 2, 2)
    _retry_now(run)
    pump()
    run.refresh_from_db()
    assert run.state == "committed", run.reason
    assert len(model.prompts) == 3
    assert ledger(run) == [("classify", "confirmed", None), ("customer", "confirmed", None)]
    assert run.ledger.get(step_id="classify").answer == {"segment": "retail"}
    assert run.transient_attempts == 0


def test_a_provider_that_keeps_failing_fails_the_step_after_the_setting_s_attempts(
    admin_user, alice, model
):
    model.refuse = UNAVAILABLE
    setting_set("processes.transient_retries", 3, by=admin_user)
    deploy(CLASSIFY, by=admin_user)
    run = invoke("acme:classify-customer", {"name": "Acme"}, alice)
    waits = []
    for _ in range(3):
        pump()
        run.refresh_from_db()
        if run.state != "running":
            break
        waits.append(run.wake_at - run.updated_at)
        _retry_now(run)
    assert run.state == "failed"
    assert len(model.prompts) == 3
    assert ledger(run) == [("classify", "failed", "overloaded"), ("customer", "skipped", None)]
    assert run.ledger.get(step_id="classify").refusal_message == (
        "the AI provider refused (503): try later"
    )
    # The backoff doubles: about 1 s, then about 2 s.
    assert [round(w.total_seconds()) for w in waits] == [1, 2]


def test_a_provider_that_cannot_be_reached_is_retried(admin_user, alice, model, settings):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: the connection is refused
    settings.TURBOBASE_AI_BASE_URL = f"http://127.0.0.1:{port}/v1"
    deploy(CLASSIFY, by=admin_user)
    run = invoke("acme:classify-customer", {"name": "Acme"}, alice)
    pump()
    run.refresh_from_db()
    assert (run.state, run.pending_reason, ledger(run)) == ("running", "retrying", [])


def test_the_retry_setting_is_listed(admin_user):
    settings_read = client_for(admin_user).get("/v1/settings").json()
    assert "processes.transient_retries" in json.dumps(settings_read)

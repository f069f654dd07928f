"""What an extension says is bounded: ctx.log lines in the server's or worker's log, and a
deployed hook's rejection as it is answered and kept in the write trail."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from extensions.deploy import extension_deploy
from extensions.pool import pool_close
from extensions.sandbox import Sandbox, SandboxLimits
from extensions.store import store_forget
from kernel.text import LOG_LINE_MAX_CHARS, LOG_LINES_PER_CALL, MESSAGE_MAX_CHARS
from records.models import Record, WriteTrail

LOGGER = "turbobase.extensions.sandbox"


def log_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def run_in_sandbox(body: str) -> None:
    with Sandbox(limits=SandboxLimits(call_budget_ms=5_000)) as box:
        box.load(f"exports.default = {{ run(ctx) {{ {body} }} }};")
        box.call(["run"], [], ctx={})
        box.call(["run"], [], ctx={})  # a second call gets its own line allowance


def test_a_long_log_line_is_cut_to_the_documented_size_and_marked(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    run_in_sandbox("ctx.log('x'.repeat(10 * 1024 * 1024));")
    lines = log_lines(caplog)
    assert len(lines) == 2
    omitted = 10 * 1024 * 1024 - (LOG_LINE_MAX_CHARS - len("… [truncated 10477403 chars]"))
    assert lines[0] == "x" * (LOG_LINE_MAX_CHARS - 28) + f"… [truncated {omitted} chars]"
    assert len(lines[0]) == LOG_LINE_MAX_CHARS


def test_a_call_logs_at_most_the_documented_number_of_lines_then_says_so(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    run_in_sandbox("for (let i = 0; i < 5000; i++) ctx.log('line', i);")
    lines = log_lines(caplog)
    dropped = (
        f"… [ctx.log: more than {LOG_LINES_PER_CALL} lines in one call; the rest of this "
        "call's lines are dropped]"
    )
    per_call = [f"line {i}" for i in range(LOG_LINES_PER_CALL)] + [dropped]
    assert lines == per_call + per_call


def test_unencodable_text_in_a_log_line_is_replaced(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    run_in_sandbox("ctx.log('a\\u0000b', {k: 'c'});")
    assert log_lines(caplog)[0] == 'a\ufffdb {"k": "c"}'


# --- a deployed hook's rejection -------------------------------------------------------------


@pytest.fixture
def _isolated(settings) -> Iterator[None]:
    settings.EXTENSIONS_HOOK_CPU_MS = 2_000
    yield
    store_forget()
    pool_close()


def deploy_rejecting_hook(by, message_js: str) -> None:
    source = f"""import {{ defineHook }} from '@turbobase/extensions';
export default defineHook({{
  id: 'acme:loud',
  recordType: 'customer',
  on: 'before_save',
  run(ctx: any) {{
    return {{ reject: {{ code: 'LOUD', field: 'parent.memo', message: {message_js} }} }};
  }},
}});
"""
    extension_deploy(entry="hooks/loud.ts", files={"hooks/loud.ts": source}, by=by)


@pytest.mark.django_db
@pytest.mark.usefixtures("_isolated")
@pytest.mark.parametrize(
    ("message_js", "answered"),
    [
        ("'no\\u0000pe'", "no\ufffdpe"),
        ("'no\\ud800pe'", "no\ufffdpe"),
    ],
)
def test_a_hook_rejection_with_unstorable_text_is_answered_and_trailed(
    admin_user, alice_api, message_js, answered
):
    deploy_rejecting_hook(admin_user, message_js)
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422, res.content
    assert res.json() == {
        "error": "write_refused",
        "rejection": {"code": "LOUD", "field": "parent.memo", "message": answered},
    }
    assert Record.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.outcome, trail.code, trail.message) == ("refused", "LOUD", answered)


@pytest.mark.django_db
@pytest.mark.usefixtures("_isolated")
def test_a_15_mib_hook_rejection_is_cut_in_the_answer_and_the_trail(admin_user, alice_api):
    deploy_rejecting_hook(admin_user, "'m'.repeat(15 * 1024 * 1024)")
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422, res.content
    assert len(res.content) < 3_000
    message = res.json()["rejection"]["message"]
    assert message == "m" * 1_972 + f"… [truncated {15 * 1024 * 1024 - 1_972} chars]"
    assert len(message) == MESSAGE_MAX_CHARS
    assert WriteTrail.reads.get().message == message
    assert Record.reads.count() == 0

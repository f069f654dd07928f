"""Processes with a task step, shared by the task tests (in-process, with workers, in a browser)."""

from __future__ import annotations


def approval(
    process_id: str = "t:approve-order",
    *,
    assignee: str = "bob",
    timeout: str | None = None,
    on_refused: str | None = None,
    then_ms: int = 0,
) -> str:
    """``approve`` (a task for ``assignee``), then ``order``, a salesOrder whose memo carries the
    task's output note — or, if the task failed and the process carries on, says so. ``then_ms``
    keeps the order step busy that long, twice (a run surely in a worker's hands after the decision)."""
    extra = f", timeout: '{timeout}'" if timeout else ""
    refused = f" onRefused: '{on_refused}'," if on_refused else ""
    busy = (
        f"const until = Date.now() + {then_ms}; while (Date.now() < until) {{ /* busy */ }}\n"
        if then_ms
        else ""
    )
    # Busy in its `when` too: each call has its own CPU budget (1 s), so the step is in a worker's
    # hands for about twice ``then_ms`` — wide enough for a test's poll on a loaded machine.
    busy_when = f" when: (ctx) => {{ {busy.strip()} return true; }}," if then_ms else ""
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{process_id}',
  input: {{ type: 'object', properties: {{ memo: {{ type: 'string' }} }}, required: ['memo'] }},
  steps: [
    {{ id: 'approve',{refused} task: {{
        assignee: '{assignee}',
        title: (ctx) => `Approve ${{ctx.input.memo}}`,
        details: (ctx) => ({{ memo: ctx.input.memo, run: ctx.runId }}){extra},
    }} }},
    {{ id: 'order', recordType: 'salesOrder',{busy_when} build: (ctx) => {{
        {busy}const approve = ctx.steps.approve;
        const note = approve.disposition === 'confirmed' ? approve.output.note : 'not approved';
        return {{ parent: {{ memo: `${{ctx.input.memo}}: ${{note}}` }} }};
      }} }},
  ],
}});
"""

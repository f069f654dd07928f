"""A process with a waitFor step, shared by the event tests (in-process and with real workers)."""

from __future__ import annotations


def trial_to_paid(
    process_id: str = "e:trial-to-paid",
    *,
    timeout: str = "14d",
    match: bool = True,
    before_ms: int = 0,
    then_ms: int = 0,
) -> str:
    """``paid`` waits for ``order.paid`` (matching the input's customer unless ``match`` is off),
    then ``note``, a salesOrder whose memo names the event's order and id — or says it never came.
    ``before_ms`` adds a first step busy that long (an event sent meanwhile comes before the wait);
    ``then_ms`` keeps the note step busy that long (a run surely in a worker's hands)."""
    matcher = " match: (ctx) => ({ customer: ctx.input.customer })," if match else ""

    def busy(ms: int) -> str:
        return (
            f"const until = Date.now() + {ms}; while (Date.now() < until) {{ /* busy */ }}\n"
            if ms
            else ""
        )

    def busy_when(ms: int) -> str:
        # Busy in its `when` too: each call has its own CPU budget (1 s), so the step is in a
        # worker's hands for about twice ``ms`` — wide enough for a test's poll on a loaded machine.
        return f" when: (ctx) => {{ {busy(ms).strip()} return true; }}," if ms else ""

    first = (
        "    { id: 'welcome', recordType: 'legacy_customer', build: (ctx) => {\n"
        f"        {busy(before_ms)}return {{ parent: {{ run: ctx.runId }} }};\n"
        "      } },\n"
        if before_ms
        else ""
    )
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{process_id}',
  input: {{ type: 'object', properties: {{ customer: {{ type: 'string' }} }}, required: ['customer'] }},
  steps: [
{first}    {{ id: 'paid', waitFor: {{ event: 'order.paid',{matcher} timeout: '{timeout}' }} }},
    {{ id: 'note', recordType: 'salesOrder',{busy_when(then_ms)} build: (ctx) => {{
        {busy(then_ms)}const paid = ctx.steps.paid.event;
        const memo = paid ? `${{ctx.input.customer}} paid ${{paid.data.order}} (${{paid.eventId}})`
          : `${{ctx.input.customer}} did not pay`;
        return {{ parent: {{ memo }} }};
      }} }},
  ],
}});
"""

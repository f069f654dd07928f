"""Processes with a sleep step, shared by the sleep tests (in-process, with workers, the bench)."""

from __future__ import annotations


def sleeper(process_id: str = "t:nap", *, sleep: str = "'2s'") -> str:
    """``nap`` (a sleep of ``sleep``: a duration literal or a function's source), then ``after``,
    a salesOrder whose memo carries the input's memo and when the nap was due to end."""
    return f"""import {{ defineProcess }} from '@turbobase/extensions';
export default defineProcess({{
  id: '{process_id}',
  input: {{ type: 'object', properties: {{ memo: {{ type: 'string' }}, wait: {{ type: 'string' }} }},
           required: ['memo'] }},
  steps: [
    {{ id: 'nap', sleep: {sleep} }},
    {{ id: 'after', recordType: 'salesOrder', build: (ctx) => ({{
        parent: {{ memo: `${{ctx.input.memo}} woke ${{ctx.steps.nap.wakeAt}}` }},
      }}) }},
  ],
}});
"""

"""A process run end to end on a laptop, with time skipped (``turbobase ext test``, and
``turbobase.testing.run_process`` for pytest).

The run uses the real parts — the deploy path, the sandbox, the boundary with its hooks and
guardrails, the engine — against whatever database Django is configured with (the CLI makes a
fresh in-memory SQLite one). What it replaces is the outside world: the clock (``clock``), the
connected systems (``verdicts``), the people who send events and decide tasks (``files``), and the
workers, whose deliveries ``driver`` performs in a loop in this process.
"""
